package acme

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"minica/ca"
	"minica/ca/store"
)

// Identifier is an identifier of an order or authorization.
type Identifier = ca.ACMEIdentifier

// Kinds of the store objects of the protocol; the bindings are package
// ca's.
const (
	kindAccount = "acme-account"
	kindKey     = "acme-key" // the account of a key, by its JWK thumbprint
	kindOrder   = "acme-order"
	kindAuthz   = "acme-authz"
	// kindReplaced marks a certificate, by its serial, replaced by an
	// order (RFC 9773 section 5).
	kindReplaced = "acme-replaced"
)

// replacement is the order that replaces a certificate.
type replacement struct {
	Order string `json:"order"`
}

// Statuses of accounts, orders, authorizations and challenges.
const (
	statusValid       = "valid"
	statusPending     = "pending"
	statusReady       = "ready"
	statusProcessing  = "processing"
	statusInvalid     = "invalid"
	statusDeactivated = "deactivated"
	statusExpired     = "expired"
	statusRevoked     = "revoked"
)

// Challenge types.
const (
	challHTTP01    = "http-01"
	challTLSALPN01 = "tls-alpn-01"
	challDNS01     = "dns-01"
)

// account is an ACME account as stored.
type account struct {
	ID         string          `json:"id"`
	Key        json.RawMessage `json:"key"` // the JWK
	Thumbprint string          `json:"thumbprint"`
	Status     string          `json:"status"`
	Contact    []string        `json:"contact,omitempty"`
	Binding    string          `json:"binding,omitempty"` // the EAB key ID
	Created    time.Time       `json:"created"`
	// Pending are the authorizations of the account that were pending
	// when last looked at, to bound them (ACMEPolicy.PendingAuthz).
	Pending []pendingAuthz `json:"pending,omitempty"`

	jwk *jose.JSONWebKey // Key parsed, when read from the store
}

type pendingAuthz struct {
	ID      string    `json:"id"`
	Expires time.Time `json:"expires"`
}

// order is an ACME order as stored. Status is stored once the order is
// processing, valid or invalid; before, it is derived from its
// authorizations (see Server.orderStatus).
type order struct {
	ID          string       `json:"id"`
	Account     string       `json:"account"`
	Status      string       `json:"status"`
	Expires     time.Time    `json:"expires"`
	Identifiers []Identifier `json:"identifiers"`
	Authzs      []string     `json:"authorizations"`
	Serial      string       `json:"serial,omitempty"`
	Replaces    string       `json:"replaces,omitempty"`
	Error       *problem     `json:"error,omitempty"`
	Created     time.Time    `json:"created"`
	// Authz is the authorization of an order of one identifier (the
	// usual order), kept in the order's own object: one object fewer to
	// create a certificate, and one read fewer to tell the order's
	// status. Its ID is embeddedAuthzID(ID). An order of several
	// identifiers keeps each authorization in an object of its own
	// (kindAuthz), as every order did before.
	Authz *authz `json:"authz,omitempty"`
}

// embeddedAuthzID is the ID of the authorization kept in the object of
// order orderID: the order's ID and ".1" ('.' is in no ID newID makes).
func embeddedAuthzID(orderID string) string { return orderID + ".1" }

// embeddingOrder returns the ID of the order whose object keeps the
// authorization id, or false when id is an authorization object's own.
func embeddingOrder(id string) (string, bool) {
	orderID, n, ok := strings.Cut(id, ".")
	return orderID, ok && n == "1"
}

// authz is an ACME authorization as stored, with its challenges.
type authz struct {
	ID         string      `json:"id"`
	Account    string      `json:"account"`
	Identifier Identifier  `json:"identifier"`
	Wildcard   bool        `json:"wildcard,omitempty"`
	Status     string      `json:"status"`
	Expires    time.Time   `json:"expires"`
	Challenges []challenge `json:"challenges"`
}

type challenge struct {
	Type      string    `json:"type"`
	Token     string    `json:"token"`
	Status    string    `json:"status"`
	Started   time.Time `json:"started,omitzero"` // of the validation in flight
	Validated time.Time `json:"validated,omitzero"`
	Error     *problem  `json:"error,omitempty"`
}

// newID returns a random ID of n bytes, base64url: 16 for objects, 32
// for challenge tokens. It starts with a letter or digit, as
// a store object's ID must (store.IsObjectID).
func newID(n int) string {
	b := make([]byte, n)
	for {
		rand.Read(b)
		if id := base64.RawURLEncoding.EncodeToString(b); id[0] != '-' && id[0] != '_' {
			return id
		}
	}
}

// keyIndexID is the ID of a key's index object: its thumbprint, which
// may start with '-', behind a letter.
func keyIndexID(thumb string) string { return "k" + thumb }

// objects reads and writes the protocol's objects in the store.
type objects struct {
	db    store.ACMEStore
	accts *decodedAccounts
}

// get reads the object kind/id into v; an unknown one gives a 404
// problem naming what.
func (o objects) get(kind, id, what string, v any) error {
	return o.read(kind, id, what, func(data []byte) error { return json.Unmarshal(data, v) })
}

// read reads the object kind/id and decodes its data with decode, as get
// does.
func (o objects) read(kind, id, what string, decode func([]byte) error) error {
	obj, err := o.db.Object(kind, id)
	if errors.Is(err, fs.ErrNotExist) {
		return notFound(what)
	}
	if err != nil {
		return err
	}
	if err := decode(obj.Data); err != nil {
		return fmt.Errorf("decoding %s %s: %w", what, id, err)
	}
	return nil
}

// put writes v durably: what a client cannot redo (an account).
func (o objects) put(kind, id string, v any) error {
	return o.write(o.db.PutObject, kind, id, v, false)
}

// putVolatile writes v without making it durable (store.Object's
// Volatile): the progress of an order, which a client redoes when a crash
// loses it.
func (o objects) putVolatile(kind, id string, v any) error {
	return o.write(o.db.PutObject, kind, id, v, true)
}

func (o objects) create(kind, id string, v any) error {
	return o.write(o.db.CreateObject, kind, id, v, false)
}

func (o objects) createVolatile(kind, id string, v any) error {
	return o.write(o.db.CreateObject, kind, id, v, true)
}

func (o objects) write(op func(store.Object) error, kind, id string, v any, volatile bool) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return op(store.Object{Kind: kind, ID: id, Data: data, Volatile: volatile})
}

// account reads account id, its jwk parsed.
func (o objects) account(id string) (a *account, err error) {
	err = o.read(kindAccount, id, "account", func(data []byte) (err error) {
		a, err = o.accts.decode(data)
		return err
	})
	return a, err
}

func (o objects) order(id string) (*order, error) {
	ord := new(order)
	return ord, o.get(kindOrder, id, "order", ord)
}

// authz reads the authorization id: from its order's object when it is
// kept there, else from its own.
func (o objects) authz(id string) (*authz, error) {
	if _, ok := embeddingOrder(id); ok {
		return o.updateAuthz(id, func(*authz) bool { return false })
	}
	az := new(authz)
	return az, o.get(kindAuthz, id, "authorization", az)
}

// authzOf reads authorization id of order ord, taking the one ord keeps
// without a read.
func (o objects) authzOf(ord *order, id string) (*authz, error) {
	if ord.Authz != nil && ord.Authz.ID == id {
		return ord.Authz, nil
	}
	return o.authz(id)
}

// putAuthz writes a new state of az without a sync (the progress of an
// order), as updateAuthz does.
func (o objects) putAuthz(az *authz) error {
	if _, ok := embeddingOrder(az.ID); !ok {
		return o.putVolatile(kindAuthz, az.ID, az)
	}
	_, err := o.updateAuthz(az.ID, func(cur *authz) bool { *cur = *az; return true })
	return err
}

// updateAuthz reads authorization id, lets change make its new state
// (or return false: nothing is written) and writes that without a sync:
// into its order's object when the order keeps it, the order's own
// fields as read. The order's fields change only once the authorization
// is valid (finalize), and the only change of a valid authorization, its
// deactivation, holds the lock finalize holds. It returns the
// authorization as it is then.
func (o objects) updateAuthz(id string, change func(*authz) bool) (*authz, error) {
	orderID, ok := embeddingOrder(id)
	if !ok {
		az, err := o.authz(id)
		if err != nil || !change(az) {
			return az, err
		}
		return az, o.putVolatile(kindAuthz, id, az)
	}
	ord, err := o.order(orderID)
	var p *problem
	if errors.As(err, &p) || (err == nil && (ord.Authz == nil || ord.Authz.ID != id)) {
		return nil, notFound("authorization")
	}
	if err != nil || !change(ord.Authz) {
		return ord.Authz, err
	}
	return ord.Authz, o.putVolatile(kindOrder, ord.ID, ord)
}

// accountOfKey returns the ID of the account of a key thumbprint, or "".
func (o objects) accountOfKey(thumb string) (string, error) {
	obj, err := o.db.Object(kindKey, keyIndexID(thumb))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return string(obj.Data), nil
}

// objectOf is a store object whose data is a string (an index's ID).
func objectOf(kind, id, data string) store.Object {
	return store.Object{Kind: kind, ID: id, Data: []byte(data)}
}

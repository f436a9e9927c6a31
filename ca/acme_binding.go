package ca

// External account bindings of the ACME server: who may get what (see
// acme.go), kept as objects of the store.

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"slices"
	"strings"
	"time"

	"minica/ca/store"
)

// CreateACMEBinding makes a new binding named name with policy p (zero
// fields take the defaults), with a fresh key ID and a 256-bit HMAC key,
// and writes it. A taken name gives an error matching fs.ErrExist. The
// caller must hold the lock.
//
// The name is checked as a certificate's name is (ValidateName); the
// policy's DNS entries must be valid names (suffixes without a wildcard),
// and its exact names and IP ranges are not checked against the CA's name
// constraints here: CheckACMEIdentifiers does that for every order. The
// lifetime must be at least MinValidity and fit within what is left of
// the CA certificate's validity now; IssueACME shortens it later to end
// with the CA's (ErrOutlivesCA when the CA is too near its end). A root
// of a hierarchy issues no leaves: ErrRootCA.
func (c *CA) CreateACMEBinding(name string, p ACMEPolicy) (*ACMEBinding, error) {
	if c.IsRoot() {
		return nil, ErrRootCA
	}
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	p.DNSSuffixes = slices.Clone(p.DNSSuffixes)
	p.DNSNames = slices.Clone(p.DNSNames)
	p.IPRanges = slices.Clone(p.IPRanges)
	if err := p.Normalize(); err != nil {
		return nil, err
	}
	now := c.Now().UTC().Truncate(time.Second)
	if p.Lifetime < MinValidity {
		return nil, fmt.Errorf("%w: lifetime %s: want at least %s", ErrValidityTooShort, FormatDuration(p.Lifetime), FormatDuration(MinValidity))
	}
	if _, _, err := c.validity(now, p.Lifetime); err != nil {
		return nil, err
	}
	if err := c.claimBindingName(name); err != nil {
		return nil, err
	}
	for range 8 {
		keyID, hmacKey, err := newACMEKeys()
		if err != nil {
			return nil, err
		}
		b := &ACMEBinding{KeyID: keyID, Name: name, HMACKey: hmacKey, Created: now, ACMEPolicy: p}
		err = c.db.CreateObject(store.Object{Kind: kindBinding, ID: keyID, Data: encodeBinding(b)})
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, errors.Join(fmt.Errorf("writing ACME binding %q: %w", name, err), c.db.DeleteObject(kindBindingName, name))
		}
		if err := c.db.PutObject(store.Object{Kind: kindBindingName, ID: name, Data: []byte(keyID)}); err != nil {
			return nil, errors.Join(fmt.Errorf("writing ACME binding %q: %w", name, err),
				c.db.DeleteObject(kindBinding, keyID), c.db.DeleteObject(kindBindingName, name))
		}
		return b, nil
	}
	return nil, errors.Join(errors.New("writing ACME binding: 8 random key IDs in a row were taken"), c.db.DeleteObject(kindBindingName, name))
}

// claimBindingName creates the name's index entry, empty until the
// binding is written (it then holds the key ID), so that a name is taken
// once. An entry whose binding was never written (a crash cut the
// creation short) or that names another binding is stale, and is taken
// over.
func (c *CA) claimBindingName(name string) error {
	for range 2 {
		err := c.db.CreateObject(store.Object{Kind: kindBindingName, ID: name, Data: nil})
		if !errors.Is(err, fs.ErrExist) {
			if err != nil {
				return fmt.Errorf("writing ACME binding %q: %w", name, err)
			}
			return nil
		}
		if b, err := c.ACMEBindingByName(name); err == nil {
			return fmt.Errorf("an ACME binding named %q already exists (key ID %s): %w", name, b.KeyID, fs.ErrExist)
		} else if !errors.Is(err, ErrACMEBindingUnknown) {
			return err
		}
		if err := c.db.DeleteObject(kindBindingName, name); err != nil {
			return err
		}
	}
	return fmt.Errorf("an ACME binding named %q already exists: %w", name, fs.ErrExist)
}

// newACMEKeys draws a key ID (16 random bytes, base64url, not starting
// with '-', so that it is a valid object ID) and an HMAC key.
func newACMEKeys() (keyID string, hmacKey []byte, err error) {
	raw := make([]byte, acmeKeyIDBytes)
	for keyID == "" || !store.IsObjectID(keyID) {
		if _, err := rand.Read(raw); err != nil {
			return "", nil, fmt.Errorf("generating an EAB key ID: %w", err)
		}
		keyID = base64.RawURLEncoding.EncodeToString(raw)
	}
	hmacKey = make([]byte, acmeHMACBytes)
	if _, err := rand.Read(hmacKey); err != nil {
		return "", nil, fmt.Errorf("generating an EAB HMAC key: %w", err)
	}
	return keyID, hmacKey, nil
}

func encodeBinding(b *ACMEBinding) []byte {
	data, _ := json.Marshal(b) // a binding always marshals
	return append(data, '\n')
}

// decodeBinding decodes a binding's object; one that does not decode, or
// whose key ID is not its object's, is an error.
func decodeBinding(o store.Object) (*ACMEBinding, error) {
	var b ACMEBinding
	if err := json.Unmarshal(o.Data, &b); err != nil || b.KeyID != o.ID {
		return nil, fmt.Errorf("corrupt ACME binding %s", o.ID)
	}
	return &b, nil
}

// ACMEBinding returns the binding of an EAB key ID (ErrACMEBindingUnknown
// when none), whatever its state.
func (c *CA) ACMEBinding(keyID string) (*ACMEBinding, error) {
	if !store.IsObjectID(keyID) {
		return nil, ErrACMEBindingUnknown
	}
	o, err := c.db.Object(kindBinding, keyID)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrACMEBindingUnknown
	}
	if err != nil {
		return nil, err
	}
	return decodeBinding(o)
}

// ACMEBindingByName returns the binding named name (ErrACMEBindingUnknown
// when none).
func (c *CA) ACMEBindingByName(name string) (*ACMEBinding, error) {
	unknown := fmt.Errorf("%w: no binding is named %s", ErrACMEBindingUnknown, printable(name))
	if ValidateName(name) != nil {
		return nil, unknown
	}
	o, err := c.db.Object(kindBindingName, name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, unknown
	}
	if err != nil {
		return nil, err
	}
	b, err := c.ACMEBinding(string(o.Data))
	if errors.Is(err, ErrACMEBindingUnknown) || (err == nil && b.Name != name) {
		return nil, unknown
	}
	return b, err
}

// ACMEBindings streams every binding, in key ID order.
func (c *CA) ACMEBindings() iter.Seq2[*ACMEBinding, error] {
	return func(yield func(*ACMEBinding, error) bool) {
		for o, err := range c.db.Objects(kindBinding) {
			var b *ACMEBinding
			if err == nil {
				b, err = decodeBinding(o)
			}
			if !yield(b, err) {
				return
			}
		}
	}
}

func (c *CA) putBinding(b *ACMEBinding) error {
	if err := c.db.PutObject(store.Object{Kind: kindBinding, ID: b.KeyID, Data: encodeBinding(b)}); err != nil {
		return fmt.Errorf("writing ACME binding %q: %w", b.Name, err)
	}
	return nil
}

// DisableACMEBinding disables the binding named name: its key binds no
// more accounts and its accounts order nothing more. Disabling a disabled
// binding changes nothing. The caller must hold the lock.
func (c *CA) DisableACMEBinding(name string) (*ACMEBinding, error) {
	b, err := c.ACMEBindingByName(name)
	if err != nil || b.Disabled {
		return b, err
	}
	b.Disabled = true
	return b, c.putBinding(b)
}

// BindACMEAccount records that the ACME account accountID was created with
// the binding of keyID: ErrACMEBindingUnknown, ErrACMEBindingDisabled, or
// ErrACMEBindingUsed when it has bound MaxAccounts accounts already
// (binding the same account again is not an error). The count goes up
// before the account's own object is written, so that a crash between
// the two spends a use of the binding rather than gives one more. The
// caller must hold the lock. With ErrACMEBindingDisabled and
// ErrACMEBindingUsed the binding is returned too.
func (c *CA) BindACMEAccount(keyID, accountID string) (*ACMEBinding, error) {
	b, err := c.ACMEBinding(keyID)
	if err != nil {
		return nil, err
	}
	if !store.IsObjectID(accountID) {
		return nil, fmt.Errorf("invalid ACME account ID %q", accountID)
	}
	if b.Disabled {
		return b, fmt.Errorf("%w: %q", ErrACMEBindingDisabled, b.Name)
	}
	if bound, err := c.boundTo(accountID); err != nil || bound == keyID || slices.Contains(b.Accounts, accountID) {
		return b, err
	}
	if b.Bound() >= max(b.MaxAccounts, 1) {
		return b, fmt.Errorf("%w: %q has bound %d account(s), its most", ErrACMEBindingUsed, b.Name, b.Bound())
	}
	b.AccountCount++
	if err := c.putBinding(b); err != nil {
		return nil, err
	}
	if err := c.db.CreateObject(store.Object{Kind: kindBound, ID: accountID, Data: []byte(keyID)}); err != nil {
		return nil, fmt.Errorf("writing the binding of ACME account %s: %w", accountID, err)
	}
	return b, nil
}

// boundTo returns the key ID of the binding that created accountID, or
// "" when none did.
func (c *CA) boundTo(accountID string) (string, error) {
	o, err := c.db.Object(kindBound, accountID)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return string(o.Data), nil
}

// ACMEBoundAccounts returns, by binding key ID, the IDs of the accounts
// each binding created, sorted; those an earlier binding kept in itself
// (ACMEBinding.Accounts) are the caller's to add.
func (c *CA) ACMEBoundAccounts() (map[string][]string, error) {
	m := map[string][]string{}
	for o, err := range c.db.Objects(kindBound) {
		if err != nil {
			return nil, err
		}
		m[string(o.Data)] = append(m[string(o.Data)], o.ID)
	}
	return m, nil
}

// acmeRate is an order counter's object.
type acmeRate struct {
	Count int `json:"count"`
}

// CountACMEOrder counts a new order in the current hour under counter,
// which names the orders counted together: a binding's key ID (its
// accounts' orders), or an account's own ID for an account without a
// binding (--acme-no-eab; "" counts every such order together). It
// fails with ErrACMERateLimited when the hour's limit is spent. A limit of
// 0 or less is DefaultACMEOrdersPerHour. The hours are UTC clock hours: a
// counter starts at 0 on the hour, and the counters of past hours are
// removed when one of a new hour is made. The counter is kept in the
// store without a sync (Volatile): a crash may forget the hour's count,
// never raise it. The caller must hold the lock.
func (c *CA) CountACMEOrder(counter string, limit int, now time.Time) error {
	if limit <= 0 {
		limit = DefaultACMEOrdersPerHour
	}
	who := counter
	if who == "" {
		who = acmeOpenCounter
	}
	hour := now.UTC().Format("2006010215")
	id := who + "." + hour
	if !store.IsObjectID(id) {
		return fmt.Errorf("%w: %s", ErrACMEBindingUnknown, printable(counter))
	}
	var r acmeRate
	o, err := c.db.Object(kindRate, id)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := c.pruneRates(hour); err != nil {
			return err
		}
	case err != nil:
		return err
	default:
		if err := json.Unmarshal(o.Data, &r); err != nil {
			return fmt.Errorf("corrupt ACME order counter %s", id)
		}
	}
	if r.Count >= limit {
		return fmt.Errorf("%w: %d new orders in the hour from %s, the most allowed", ErrACMERateLimited, r.Count, now.UTC().Truncate(time.Hour).Format(time.RFC3339))
	}
	r.Count++
	data, _ := json.Marshal(r)
	return c.db.PutObject(store.Object{Kind: kindRate, ID: id, Data: data, Volatile: true})
}

// pruneRates removes the order counters of hours before hour.
func (c *CA) pruneRates(hour string) error {
	var old []string
	for o, err := range c.db.Objects(kindRate) {
		if err != nil {
			return err
		}
		if i := strings.LastIndexByte(o.ID, '.'); i < 0 || o.ID[i+1:] < hour {
			old = append(old, o.ID)
		}
	}
	for _, id := range old {
		if err := c.db.DeleteObject(kindRate, id); err != nil {
			return err
		}
	}
	return nil
}

package ca

// The policy side of minica's ACME server (serve/acme): external account
// bindings (who may get what), issuance for a finalized order, and the
// renewal window of RFC 9773. The protocol's own objects (accounts,
// orders, authorizations) are serve/acme's; all of it is kept in the
// store's ACMEStore, so that it holds across serve replicas.

import (
	"crypto"
	"crypto/x509"
	"errors"
	"iter"
	"net/netip"
	"time"

	"minica/ca/store"
)

// Defaults of an ACME binding.
const (
	// DefaultACMELifetime is the lifetime of an ACME certificate unless
	// the binding says otherwise: short, since ACME clients renew on
	// their own.
	DefaultACMELifetime = 7 * 24 * time.Hour
	// DefaultACMEOrdersPerHour bounds the new orders of a binding's
	// accounts in any hour.
	DefaultACMEOrdersPerHour = 300
	// DefaultACMEPendingAuthz bounds the pending authorizations of one
	// account.
	DefaultACMEPendingAuthz = 100
	// DefaultACMEAccounts is how many ACME accounts one binding's key
	// may create: one, as an EAB key is a one-time credential.
	DefaultACMEAccounts = 1
)

// Errors of the ACME policy, for the server to map to ACME error types.
var (
	// ErrACMEBindingUnknown: no binding has this key ID
	// (unauthorized / externalAccountRequired).
	ErrACMEBindingUnknown = errors.New("unknown external account binding")
	// ErrACMEBindingDisabled: the binding was disabled (unauthorized).
	ErrACMEBindingDisabled = errors.New("external account binding disabled")
	// ErrACMEBindingUsed: the binding has bound all the accounts it may
	// (unauthorized).
	ErrACMEBindingUsed = errors.New("external account binding already used")
	// ErrACMEIdentifier: the binding or the CA does not allow an
	// identifier (rejectedIdentifier).
	ErrACMEIdentifier = errors.New("identifier not allowed")
	// ErrACMERateLimited: the binding's orders per hour are spent
	// (rateLimited).
	ErrACMERateLimited = errors.New("rate limit reached")
	// ErrACMECSR: the finalize CSR is not acceptable (badCSR).
	ErrACMECSR = errors.New("CSR not acceptable")
)

// ACMEIdentifier is an identifier of an ACME order: Type "dns" or "ip".
type ACMEIdentifier struct {
	Type  string `json:"type"`
	Value string `json:"value"`
}

// ACMEBinding is an external account binding: the key an ACME client
// proves with its newAccount request, and what the accounts it creates
// may get. Name is the operator's name for it, unique; KeyID the EAB key
// ID shown to the client. HMACKey is stored because the server needs it
// to check the binding's MAC, and shown once, when the binding is made.
type ACMEBinding struct {
	KeyID   string    `json:"key_id"`
	Name    string    `json:"name"`
	HMACKey []byte    `json:"hmac_key"`
	Created time.Time `json:"created"`
	ACMEPolicy
	// Accounts are the ACME account IDs the binding created.
	Accounts []string `json:"accounts,omitempty"`
	Disabled bool     `json:"disabled,omitempty"`
}

// ACMEPolicy is what the accounts of a binding may get (and, without
// bindings, what anyone may: --acme-no-eab). An empty allow list of both
// DNS and IP allows every name the CA's name constraints allow.
type ACMEPolicy struct {
	// DNSSuffixes allow every name under each suffix (not the suffix
	// itself); DNSNames allow exact names.
	DNSSuffixes []string       `json:"dns_suffixes,omitempty"`
	DNSNames    []string       `json:"dns_names,omitempty"`
	IPRanges    []netip.Prefix `json:"ip_ranges,omitempty"`
	// Client adds clientAuth to the server profile (service-to-service
	// mTLS).
	Client        bool          `json:"client,omitempty"`
	Lifetime      time.Duration `json:"lifetime"`
	OrdersPerHour int           `json:"orders_per_hour"`
	PendingAuthz  int           `json:"pending_authz"`
	MaxAccounts   int           `json:"max_accounts"`
}

// ACMEOpen is the policy of an ACME server without bindings
// (--acme-no-eab): every name the CA allows, the defaults otherwise.
func ACMEOpen() ACMEPolicy {
	return ACMEPolicy{Lifetime: DefaultACMELifetime, OrdersPerHour: DefaultACMEOrdersPerHour, PendingAuthz: DefaultACMEPendingAuthz}
}

// Allows checks one identifier against the policy: nil, or an error
// matching ErrACMEIdentifier that says why. The CA's name constraints are
// checked by CA.CheckACMEIdentifiers, on top.
func (p *ACMEPolicy) Allows(id ACMEIdentifier) error {
	return errors.New("not implemented")
}

// ACMEStore returns the store's ACME objects, for serve/acme.
func (c *CA) ACMEStore() store.ACMEStore { return c.db }

// CreateACMEBinding makes a new binding named name with policy p (zero
// fields take the defaults), with a fresh key ID and a 256-bit HMAC key,
// and writes it. A taken name gives an error matching fs.ErrExist. The
// caller must hold the lock.
func (c *CA) CreateACMEBinding(name string, p ACMEPolicy) (*ACMEBinding, error) {
	return nil, errors.New("not implemented")
}

// ACMEBinding returns the binding of an EAB key ID (ErrACMEBindingUnknown
// when none), whatever its state.
func (c *CA) ACMEBinding(keyID string) (*ACMEBinding, error) {
	return nil, errors.New("not implemented")
}

// ACMEBindingByName returns the binding named name (ErrACMEBindingUnknown
// when none).
func (c *CA) ACMEBindingByName(name string) (*ACMEBinding, error) {
	return nil, errors.New("not implemented")
}

// ACMEBindings streams every binding, in key ID order.
func (c *CA) ACMEBindings() iter.Seq2[*ACMEBinding, error] {
	return nil
}

// DisableACMEBinding disables the binding named name: its key binds no
// more accounts and its accounts order nothing more. The caller must hold
// the lock.
func (c *CA) DisableACMEBinding(name string) (*ACMEBinding, error) {
	return nil, errors.New("not implemented")
}

// BindACMEAccount records that the ACME account accountID was created with
// the binding of keyID: ErrACMEBindingUnknown, ErrACMEBindingDisabled, or
// ErrACMEBindingUsed when it has bound MaxAccounts accounts already
// (binding the same account again is not an error). The caller must hold
// the lock.
func (c *CA) BindACMEAccount(keyID, accountID string) (*ACMEBinding, error) {
	return nil, errors.New("not implemented")
}

// CountACMEOrder counts a new order of the binding keyID ("" for an
// account without one) in the current hour, in the store, and fails with
// ErrACMERateLimited when the hour's limit is spent. The caller must hold
// the lock.
func (c *CA) CountACMEOrder(keyID string, limit int, now time.Time) error {
	return errors.New("not implemented")
}

// CheckACMEIdentifiers checks an order's identifiers against p and the
// CA's name constraints (of every CA of the chain): nil, or an error
// matching ErrACMEIdentifier naming the first refused.
func (c *CA) CheckACMEIdentifiers(p *ACMEPolicy, ids []ACMEIdentifier) error {
	return errors.New("not implemented")
}

// ACMEOrder is what IssueACME certifies: an order whose identifiers are
// all authorized, and the account that finalizes it.
type ACMEOrder struct {
	Account     string // the ACME account ID, kept in the record
	Identifiers []ACMEIdentifier
	Policy      ACMEPolicy
}

// IssueACME signs the certificate of a finalized order for the key of
// csr. The CSR must be signed by its key, the key strong enough
// (CheckPublicKey), ask for no CA, and name exactly the order's
// identifiers (its CN, if any, one of them); else an error matching
// ErrACMECSR. The certificate's name (its record's) is the first DNS
// identifier, else the first IP; a name may have several valid ACME
// certificates at once (renewals overlap). Profile server, with
// clientAuth when Policy.Client; lifetime Policy.Lifetime within the CA's.
// The record carries the account. The caller must hold the lock.
func (c *CA) IssueACME(signer crypto.Signer, o ACMEOrder, csr *x509.CertificateRequest) (*Issued, error) {
	return nil, errors.New("not implemented")
}

// ACMERenewalWindow is the suggested renewal window of RFC 9773 for a
// certificate's record at now: the last third of its life by default;
// from now to now plus a few minutes when the certificate or its CA was
// revoked, or when an operator asked for it (ACMERenewNow).
func (c *CA) ACMERenewalWindow(rec *Record, now time.Time) (start, end time.Time, err error) {
	return time.Time{}, time.Time{}, errors.New("not implemented")
}

// ACMERenewNow moves the renewal window of the ACME certificates of name
// (every ACME certificate when all) to now, in the store. It returns how
// many valid certificates it moved. The caller must hold the lock.
func (c *CA) ACMERenewNow(name string, all bool, now time.Time) (int, error) {
	return 0, errors.New("not implemented")
}

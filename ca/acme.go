package ca

// The policy side of minica's ACME server (serve/acme): external account
// bindings (who may get what), issuance for a finalized order, and the
// renewal window of RFC 9773. The protocol's own objects (accounts,
// orders, authorizations) are serve/acme's; all of it is kept in the
// store's ACMEStore, so that it holds across serve replicas.

import (
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"net"
	"net/netip"
	"slices"
	"strings"
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
// DNS and IP allows every name the CA's name constraints allow, except
// wildcards, which need a DNS suffix (see Allows).
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
// (--acme-no-eab): every name the CA allows but wildcards, the defaults
// otherwise.
func ACMEOpen() ACMEPolicy {
	return ACMEPolicy{Lifetime: DefaultACMELifetime, OrdersPerHour: DefaultACMEOrdersPerHour, PendingAuthz: DefaultACMEPendingAuthz}
}

// Allows checks one identifier against the policy: nil, or an error
// matching ErrACMEIdentifier that says why. The CA's name constraints are
// checked by CA.CheckACMEIdentifiers, on top.
//
// A "dns" identifier is compared lowercase without a trailing dot (see
// NormalizeACMEIdentifier): it is allowed when it is one of DNSNames, or
// under one of DNSSuffixes on a label boundary ("a.svc.example.com" is
// under "svc.example.com", "evilsvc.example.com" is not, nor is
// "svc.example.com" itself). A wildcard "*.B" is allowed only when it is
// one of DNSNames, or when B is a suffix or under one: every name it
// covers is then allowed. An "ip" identifier is allowed when it is within
// one of IPRanges. A policy with neither DNS nor IP entries allows every
// well-formed identifier except wildcards, which always need an entry.
func (p *ACMEPolicy) Allows(id ACMEIdentifier) error {
	n, err := NormalizeACMEIdentifier(id)
	if err != nil {
		return err
	}
	open := len(p.DNSSuffixes) == 0 && len(p.DNSNames) == 0 && len(p.IPRanges) == 0
	switch n.Type {
	case "dns":
		for _, d := range p.DNSNames {
			if normalDNS(d) == n.Value {
				return nil
			}
		}
		base, wild := strings.CutPrefix(n.Value, "*.")
		for _, sfx := range p.DNSSuffixes {
			sfx = strings.TrimPrefix(normalDNS(sfx), ".")
			if strings.HasSuffix(base, "."+sfx) || (wild && base == sfx) {
				return nil
			}
		}
		switch {
		case wild:
			return fmt.Errorf("%w: %s: a wildcard needs a DNS suffix that covers it (%s)", ErrACMEIdentifier, n, p.dnsAllowed())
		case open:
			return nil
		case len(p.DNSNames) == 0 && len(p.DNSSuffixes) == 0:
			return fmt.Errorf("%w: %s: the policy allows no DNS names", ErrACMEIdentifier, n)
		}
		return fmt.Errorf("%w: %s: not %s", ErrACMEIdentifier, n, p.dnsAllowed())
	case "ip":
		addr, _ := netip.ParseAddr(n.Value) // normalized: it parses
		for _, r := range p.IPRanges {
			if r.Contains(addr) {
				return nil
			}
		}
		if open {
			return nil
		}
		if len(p.IPRanges) == 0 {
			return fmt.Errorf("%w: %s: the policy allows no IP addresses", ErrACMEIdentifier, n)
		}
		ranges := make([]string, len(p.IPRanges))
		for i, r := range p.IPRanges {
			ranges[i] = r.String()
		}
		return fmt.Errorf("%w: %s: not within %s", ErrACMEIdentifier, n, strings.Join(ranges, ", "))
	}
	return fmt.Errorf("%w: %s", ErrACMEIdentifier, n) // unreachable: normalized
}

// dnsAllowed says which DNS names p allows, for messages.
func (p *ACMEPolicy) dnsAllowed() string {
	var parts []string
	if len(p.DNSNames) > 0 {
		parts = append(parts, "one of "+strings.Join(p.DNSNames, ", "))
	}
	if len(p.DNSSuffixes) > 0 {
		parts = append(parts, "under "+strings.Join(p.DNSSuffixes, ", "))
	}
	if len(parts) == 0 {
		return "the policy lists none"
	}
	return strings.Join(parts, ", nor ")
}

// String is the identifier as messages show it: dns "web.example.com".
func (id ACMEIdentifier) String() string { return fmt.Sprintf("%s %q", id.Type, id.Value) }

// MaxACMEIdentifiers is the most identifiers an order may have.
const MaxACMEIdentifiers = 100

// NormalizeACMEIdentifier checks that id is well formed and returns it in
// the form the policy compares and the certificate carries: a "dns" value
// is a host name (ValidateDNSName, optionally "*." and one more label or
// more), lowercase, without a trailing dot, and not an IP address; an
// "ip" value (RFC 8738) an IPv4 or IPv6 address without a zone, in its
// canonical text (an IPv4-mapped IPv6 address as IPv4). Anything else is
// an error matching ErrACMEIdentifier.
func NormalizeACMEIdentifier(id ACMEIdentifier) (ACMEIdentifier, error) {
	switch id.Type {
	case "dns":
		v, err := normalizeACMEDNS(id.Value)
		if err != nil {
			return id, fmt.Errorf("%w: %w", ErrACMEIdentifier, err)
		}
		return ACMEIdentifier{Type: "dns", Value: v}, nil
	case "ip":
		a, err := netip.ParseAddr(id.Value)
		if err != nil || a.Zone() != "" {
			return id, fmt.Errorf("%w: ip %s is not an IP address", ErrACMEIdentifier, printable(id.Value))
		}
		return ACMEIdentifier{Type: "ip", Value: a.Unmap().String()}, nil
	}
	return id, fmt.Errorf("%w: type %s: want dns or ip", ErrACMEIdentifier, printable(id.Type))
}

// normalizeACMEDNS is NormalizeACMEIdentifier for the value of a "dns"
// identifier, with errors that do not match ErrACMEIdentifier.
func normalizeACMEDNS(s string) (string, error) {
	v := normalDNS(s)
	if err := ValidateDNSName(v); err != nil {
		return "", err
	}
	if _, err := netip.ParseAddr(v); err == nil {
		return "", fmt.Errorf("DNS name %s is an IP address: use an identifier of type ip", printable(s))
	}
	if base, wild := strings.CutPrefix(v, "*."); wild && !strings.Contains(base, ".") {
		return "", fmt.Errorf("DNS name %s: a wildcard must stand for one label under a domain of two labels or more", printable(s))
	}
	return v, nil
}

// normalDNS lowercases a DNS name and drops a trailing dot.
func normalDNS(s string) string { return strings.ToLower(strings.TrimSuffix(s, ".")) }

// Normalize checks the policy of a new binding and fills in the defaults,
// as CreateACMEBinding does: DNS entries lowercase without a trailing dot
// (a suffix also without a leading dot, and never a wildcard), IP ranges
// masked, the limits not negative (0 takes the default), a zero lifetime
// DefaultACMELifetime. It changes the slices of p in place. The lifetime
// is checked against the CA by CreateACMEBinding.
func (p *ACMEPolicy) Normalize() error {
	for i, d := range p.DNSSuffixes {
		d = strings.TrimPrefix(normalDNS(d), ".")
		if strings.Contains(d, "*") {
			return fmt.Errorf("invalid DNS suffix %s: want a domain such as svc.example.com, without a wildcard (it allows every name under it)", printable(p.DNSSuffixes[i]))
		}
		if err := ValidateDNSName(d); err != nil {
			return fmt.Errorf("invalid DNS suffix: %w", err)
		}
		p.DNSSuffixes[i] = d
	}
	for i, d := range p.DNSNames {
		n, err := normalizeACMEDNS(d)
		if err != nil {
			return err
		}
		p.DNSNames[i] = n
	}
	for i, r := range p.IPRanges {
		if !r.IsValid() {
			return fmt.Errorf("invalid IP range %s", r)
		}
		p.IPRanges[i] = r.Masked()
	}
	for _, f := range []struct {
		v    *int
		name string
		def  int
	}{{&p.OrdersPerHour, "orders per hour", DefaultACMEOrdersPerHour}, {&p.PendingAuthz, "pending authorizations", DefaultACMEPendingAuthz}, {&p.MaxAccounts, "accounts", DefaultACMEAccounts}} {
		switch {
		case *f.v < 0:
			return fmt.Errorf("invalid number of %s %d: want 1 or more (0 for the default, %d)", f.name, *f.v, f.def)
		case *f.v == 0:
			*f.v = f.def
		}
	}
	if p.Lifetime == 0 {
		p.Lifetime = DefaultACMELifetime
	}
	return nil
}

// ACME objects of the policy in the store, by kind: the bindings by key
// ID, the index of their names (ID the name, data the key ID), the order
// counters (ID the key ID, or acmeOpenCounter, "." the hour), and the
// renew-now marks (ID a serial, or acmeRenewAll).
const (
	kindBinding     = "eab"
	kindBindingName = "eab-name"
	kindRate        = "acme-rate"
	kindRenew       = "acme-renew"
	acmeOpenCounter = "open"
	acmeRenewAll    = "all"
)

// acmeKeyIDBytes is the size of an EAB key ID, and acmeHMACBytes of its
// HMAC key (256 bits, for HS256).
const (
	acmeKeyIDBytes = 16
	acmeHMACBytes  = 32
)

// ACMEStore returns the store's ACME objects, for serve/acme.
func (c *CA) ACMEStore() store.ACMEStore { return c.db }

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
// (binding the same account again is not an error). The caller must hold
// the lock. With ErrACMEBindingDisabled and ErrACMEBindingUsed the binding
// is returned too.
func (c *CA) BindACMEAccount(keyID, accountID string) (*ACMEBinding, error) {
	b, err := c.ACMEBinding(keyID)
	if err != nil {
		return nil, err
	}
	switch {
	case b.Disabled:
		return b, fmt.Errorf("%w: %q", ErrACMEBindingDisabled, b.Name)
	case slices.Contains(b.Accounts, accountID):
		return b, nil
	case len(b.Accounts) >= max(b.MaxAccounts, 1):
		return b, fmt.Errorf("%w: %q has bound %d account(s), its most", ErrACMEBindingUsed, b.Name, len(b.Accounts))
	}
	b.Accounts = append(b.Accounts, accountID)
	return b, c.putBinding(b)
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

// CheckACMEIdentifiers checks an order's identifiers against p and the
// CA's name constraints (of every CA of the chain): nil, or an error
// matching ErrACMEIdentifier naming the first refused. Each must be well
// formed (NormalizeACMEIdentifier); an order has 1 to MaxACMEIdentifiers.
func (c *CA) CheckACMEIdentifiers(p *ACMEPolicy, ids []ACMEIdentifier) error {
	if len(ids) == 0 || len(ids) > MaxACMEIdentifiers {
		return fmt.Errorf("%w: an order has %d identifiers: want 1 to %d", ErrACMEIdentifier, len(ids), MaxACMEIdentifiers)
	}
	for _, id := range ids {
		n, err := NormalizeACMEIdentifier(id)
		if err != nil {
			return err
		}
		if err := p.Allows(n); err != nil {
			return err
		}
		var probe x509.Certificate
		if n.Type == "dns" {
			probe.DNSNames = []string{n.Value}
		} else {
			probe.IPAddresses = []net.IP{net.IP(netip.MustParseAddr(n.Value).AsSlice())}
		}
		if err := c.checkChainConstraints(&probe); err != nil {
			return fmt.Errorf("%w: %w", ErrACMEIdentifier, err)
		}
	}
	return nil
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
//
// The identifiers are checked again (CheckACMEIdentifiers). As RFC 8555
// section 7.4 has it, a name may be in the CSR's SAN or its CN or both;
// the CSR may ask for nothing else (no email or URI). The certificate
// carries the identifiers (DNS names, then IPs, in the order's order) and
// a CN of the first that fits in 64 characters (none when none does); its
// subject has nothing else. Its name in the CA directory is the first
// identifier as ACMECertName makes it a name. A lifetime that would
// outlast the CA certificate is cut to end with it.
func (c *CA) IssueACME(signer crypto.Signer, o ACMEOrder, csr *x509.CertificateRequest) (*Issued, error) {
	if err := c.CheckACMEIdentifiers(&o.Policy, o.Identifiers); err != nil {
		return nil, err
	}
	ids := make([]ACMEIdentifier, len(o.Identifiers))
	for i, id := range o.Identifiers {
		ids[i], _ = NormalizeACMEIdentifier(id) // checked above
	}
	if err := checkACMECSR(csr, ids); err != nil {
		return nil, err
	}
	req := Request{Profile: Server, PublicKey: csr.PublicKey, Force: true,
		acmeAccount: o.Account, alsoClientAuth: o.Policy.Client}
	seen := map[ACMEIdentifier]bool{}
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		if id.Type == "dns" {
			req.DNSNames = append(req.DNSNames, id.Value)
		} else {
			req.IPs = append(req.IPs, net.IP(netip.MustParseAddr(id.Value).AsSlice()))
		}
	}
	first := slices.IndexFunc(ids, func(id ACMEIdentifier) bool { return id.Type == "dns" })
	if first < 0 {
		first = 0
	}
	req.Name = ACMECertName(ids[first])
	if cn := slices.IndexFunc(ids, func(id ACMEIdentifier) bool { return len(id.Value) <= 64 && id.Type == "dns" }); cn >= 0 {
		req.CommonName = ids[cn].Value
	} else if len(req.IPs) > 0 {
		req.CommonName = req.IPs[0].String()
	} else {
		req.noCommonName = true
	}
	lifetime, err := c.acmeLifetime(o.Policy.Lifetime)
	if err != nil {
		return nil, err
	}
	req.Validity = lifetime
	return c.Issue(signer, req)
}

// acmeLifetime is the lifetime of an ACME certificate issued now for a
// binding's lifetime (0: DefaultACMELifetime), cut so that it ends with
// the CA certificate, a minute early so that the clock read again by
// Issue does not push it past.
func (c *CA) acmeLifetime(lifetime time.Duration) (time.Duration, error) {
	if lifetime == 0 {
		lifetime = DefaultACMELifetime
	}
	notBefore := c.Now().UTC().Truncate(time.Second).Add(-Backdate)
	if notBefore.Before(c.Cert.NotBefore) {
		notBefore = c.Cert.NotBefore
	}
	if notBefore.Add(lifetime).After(c.Cert.NotAfter) {
		lifetime = c.Cert.NotAfter.Sub(notBefore) - time.Minute
		if lifetime < MinValidity {
			return 0, fmt.Errorf("%w: the CA certificate expires on %s, too soon for any certificate", ErrOutlivesCA, c.Cert.NotAfter.UTC().Format(time.RFC3339))
		}
	}
	return lifetime, nil
}

// checkACMECSR checks the CSR of a finalize for the order's identifiers
// ids (normalized): its signature, its key, no CA:TRUE, and the same
// names: every one of ids in its SAN or CN, nothing else.
func checkACMECSR(csr *x509.CertificateRequest, ids []ACMEIdentifier) error {
	if err := csr.CheckSignature(); err != nil {
		return fmt.Errorf("%w: its signature: %v", ErrACMECSR, err)
	}
	if err := CheckPublicKey(csr.PublicKey); err != nil {
		return fmt.Errorf("%w: %v", ErrACMECSR, err)
	}
	if slices.Contains(IgnoredCSRExtensions(csr), "basicConstraints (CA:TRUE)") {
		return fmt.Errorf("%w: it asks to be a CA (basicConstraints CA:TRUE)", ErrACMECSR)
	}
	if len(csr.EmailAddresses) > 0 || len(csr.URIs) > 0 {
		return fmt.Errorf("%w: it asks for %s; an order has only DNS names and IP addresses", ErrACMECSR,
			sanList(csrSANList(&x509.CertificateRequest{EmailAddresses: csr.EmailAddresses, URIs: csr.URIs})))
	}
	var got []ACMEIdentifier
	add := func(id ACMEIdentifier) error {
		n, err := NormalizeACMEIdentifier(id)
		if err != nil || !slices.Contains(ids, n) {
			return fmt.Errorf("%w: it asks for %s, which the order does not name", ErrACMECSR, id)
		}
		got = append(got, n)
		return nil
	}
	for _, d := range csr.DNSNames {
		if err := add(ACMEIdentifier{Type: "dns", Value: d}); err != nil {
			return err
		}
	}
	for _, ip := range csr.IPAddresses {
		if err := add(ACMEIdentifier{Type: "ip", Value: ip.String()}); err != nil {
			return err
		}
	}
	if cn := csr.Subject.CommonName; cn != "" {
		id := ACMEIdentifier{Type: "dns", Value: cn}
		if _, err := netip.ParseAddr(cn); err == nil {
			id.Type = "ip"
		}
		if add(id) != nil {
			return fmt.Errorf("%w: its common name %s is not one of the order's identifiers", ErrACMECSR, printable(cn))
		}
	}
	for _, id := range ids {
		if !slices.Contains(got, id) {
			return fmt.Errorf("%w: it does not ask for %s, which the order names", ErrACMECSR, id)
		}
	}
	return nil
}

// ACMECertName is the name in the CA directory of an ACME certificate
// whose first identifier is id (normalized): the DNS name or the IPv4
// address itself when it is a valid name (ValidateName: at most 64
// characters); a wildcard "*.B" as "wildcard_.B"; an IPv6 address with
// its colons as underscores after "ip6_"; and a name longer than 64
// characters cut to 55, with "_" and 8 hex digits of the SHA-256 of the
// whole. A "_" is in no DNS name, so a made-up name never is a host's.
func ACMECertName(id ACMEIdentifier) string {
	v := id.Value
	switch {
	case id.Type == "ip" && strings.Contains(v, ":"):
		v = "ip6_" + strings.ReplaceAll(v, ":", "_")
	case strings.HasPrefix(v, "*."):
		v = "wildcard_" + v[1:]
	}
	if len(v) > 64 {
		sum := sha256.Sum256([]byte(id.Value))
		v = v[:55] + "_" + hex.EncodeToString(sum[:4])
	}
	return v
}

// acmeRenewMark is a renew-now mark's object: certificates issued at or
// before At renew now.
type acmeRenewMark struct {
	At time.Time `json:"at"`
}

// acmeUrgentAgo is how far in the past the renewal window of a certificate
// to renew at once ends; it lasts as long again. RFC 9773 section 4.2 has
// a client pick a random moment in the window and renew at once if that
// moment has passed: a window wholly in the past makes every client renew
// at its next check, as Let's Encrypt's answer for a revoked certificate
// does. A window from now on would have it pick a moment up to minutes
// ahead, and as the window is computed anew at each check, a client that
// does not sleep until that moment (lego checks again after the
// Retry-After) would almost never reach it. An hour also absorbs a
// client's clock running behind.
const acmeUrgentAgo = time.Hour

// ACMERenewalWindow is the suggested renewal window of RFC 9773 for a
// certificate's record at now: the last third of its life by default;
// wholly in the past when the certificate or its CA was revoked, or when
// an operator asked for it (ACMERenewNow), so that a client renews at its
// next check.
//
// The default window starts two thirds into the certificate's life and
// ends at five sixths: a client picks a moment within it, and the last
// sixth is left for its retries. The urgent window is two hours ago to an
// hour ago. The CA counts as revoked when it is an intermediate
// whose root's CRL (the one LoadRootCRL reads; an unreadable one is
// ignored) lists it. A pending or void record has no window (an error).
func (c *CA) ACMERenewalWindow(rec *Record, now time.Time) (start, end time.Time, err error) {
	if rec == nil || !rec.Issued() {
		return time.Time{}, time.Time{}, fmt.Errorf("%w: no certificate was issued", ErrNotFound)
	}
	urgent, err := c.acmeRenewUrgent(rec)
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	if urgent {
		end = now.UTC().Truncate(time.Second).Add(-acmeUrgentAgo)
		return end.Add(-acmeUrgentAgo), end, nil
	}
	life := rec.NotAfter.Sub(rec.NotBefore)
	return rec.NotBefore.Add(life / 3 * 2), rec.NotAfter.Add(-life / 6), nil
}

// acmeRenewUrgent tells whether rec should renew at once: revoked, its
// CA revoked, or marked by ACMERenewNow.
func (c *CA) acmeRenewUrgent(rec *Record) (bool, error) {
	if rec.Status == StatusRevoked {
		return true, nil
	}
	if c.IsIntermediate() {
		if crl, err := c.LoadRootCRL(); err == nil && crl.IsRevoked(c.Cert.SerialNumber) {
			return true, nil
		}
	}
	for _, id := range []string{rec.Serial, acmeRenewAll} {
		o, err := c.db.Object(kindRenew, id)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return false, err
		}
		var m acmeRenewMark
		if err := json.Unmarshal(o.Data, &m); err != nil {
			return false, fmt.Errorf("corrupt ACME renew-now mark %s", id)
		}
		if !rec.IssuedAt.After(m.At) {
			return true, nil
		}
	}
	return false, nil
}

// ACMERenewNow moves the renewal window of the ACME certificates of name
// (every ACME certificate when all) to now, in the store. It returns how
// many valid certificates it moved. The caller must hold the lock.
//
// An ACME certificate is one whose record names an account. The window
// moves for the certificates issued until now only: their successors get
// the default window. A name with no certificate at all gives an error
// matching ErrNotFound. The marks of certificates no longer valid are
// removed on the way.
func (c *CA) ACMERenewNow(name string, all bool, now time.Time) (int, error) {
	now = now.UTC().Truncate(time.Second)
	mark, _ := json.Marshal(acmeRenewMark{At: now})
	if err := c.pruneRenewMarks(now); err != nil {
		return 0, err
	}
	isACME := func(r *Record) bool { return r.ACMEAccount != "" && r.StatusAt(now) == StatusValid }
	if all {
		n := 0
		for r, err := range c.Records() {
			if err != nil {
				return 0, err
			}
			if isACME(r) {
				n++
			}
		}
		return n, c.db.PutObject(store.Object{Kind: kindRenew, ID: acmeRenewAll, Data: mark})
	}
	recs, err := c.RecordsByName(name)
	if err != nil {
		return 0, err
	}
	if len(recs) == 0 {
		return 0, fmt.Errorf("%w named %q", ErrNotFound, name)
	}
	n := 0
	for _, r := range recs {
		if !isACME(r) {
			continue
		}
		if err := c.db.PutObject(store.Object{Kind: kindRenew, ID: r.Serial, Data: mark}); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// pruneRenewMarks removes the renew-now marks of serials whose
// certificate is no longer valid at now.
func (c *CA) pruneRenewMarks(now time.Time) error {
	var old []string
	for o, err := range c.db.Objects(kindRenew) {
		if err != nil {
			return err
		}
		if o.ID == acmeRenewAll {
			continue
		}
		if r, err := c.recordHex(o.ID); errors.Is(err, ErrNotFound) || (err == nil && r.StatusAt(now) != StatusValid) {
			old = append(old, o.ID)
		}
	}
	for _, id := range old {
		if err := c.db.DeleteObject(kindRenew, id); err != nil {
			return err
		}
	}
	return nil
}

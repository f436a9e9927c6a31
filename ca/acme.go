package ca

// The policy side of minica's ACME server (serve/acme): external account
// bindings (who may get what), issuance for a finalized order, and the
// renewal window of RFC 9773. The protocol's own objects (accounts,
// orders, authorizations) are serve/acme's; all of it is kept in the
// store's ACMEStore, so that it holds across serve replicas.

import (
	"errors"
	"fmt"
	"net/netip"
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
	// AccountCount is how many ACME accounts the binding created. Their
	// IDs are objects of their own (ACMEBoundAccounts), so that the
	// binding, read for every order, stays small however many it binds.
	AccountCount int `json:"account_count,omitempty"`
	// Accounts are the account IDs that a binding kept in itself before
	// (minica of 2026-12-06); they count, and are listed, with the others.
	Accounts []string `json:"accounts,omitempty"`
	Disabled bool     `json:"disabled,omitempty"`
}

// Bound is how many accounts the binding created.
func (b *ACMEBinding) Bound() int { return b.AccountCount + len(b.Accounts) }

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
// ID, the index of their names (ID the name, data the key ID), the
// accounts each created (ID the account, data the key ID), the order
// counters (ID the key ID, or acmeOpenCounter, "." the hour), and the
// renew-now marks (ID a serial, or acmeRenewAll).
const (
	kindBinding     = "eab"
	kindBindingName = "eab-name"
	kindBound       = "eab-account" // an account's binding: ID the account, data the key ID
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

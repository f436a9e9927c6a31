package ca

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
)

// noNames is the subtree that excludes a whole name type from a constrained
// CA: it is both permitted and excluded, so no name of its type is within
// the permitted subtrees and outside the excluded ones, however a verifier
// matches it. An excluded empty name would do for Go, but OpenSSL matches
// no email or URI with it. It lies under the reserved top-level domain
// "invalid" (RFC 6761 section 6.4), so no real name is in it even for a
// verifier that ignored the exclusion; zlint wants a URI constraint to be a
// fully qualified domain name, so it has two labels.
const noNames = "none.invalid"

// ErrTypeNotPermitted is matched by the error of a name whose type the CA's
// name constraints exclude entirely: a CA with any permitted subtree
// permits only the name types that have one.
var ErrTypeNotPermitted = errors.New("the CA's name constraints permit no name of this type")

// Constraints are the name constraints of a CA certificate (RFC 5280
// 4.2.1.10): permitted and excluded DNS domains, email domains or
// addresses, URI host domains and IP ranges. With any permitted subtree
// set, the name types left without one are excluded (see
// setNameConstraints); excluded subtrees alone exclude only themselves.
type Constraints struct {
	PermittedDNS    []string
	PermittedEmails []string
	PermittedURIs   []string
	PermittedIPs    []*net.IPNet
	ExcludedDNS     []string
	ExcludedEmails  []string
	ExcludedURIs    []string
	ExcludedIPs     []*net.IPNet
}

// Constraints returns the name constraints that o asks for.
func (o *InitOptions) Constraints() Constraints { return o.constraints() }

func (o *InitOptions) constraints() Constraints {
	return Constraints{
		PermittedDNS: o.PermittedDNS, PermittedEmails: o.PermittedEmails, PermittedURIs: o.PermittedURIs, PermittedIPs: o.PermittedIPs,
		ExcludedDNS: o.ExcludedDNS, ExcludedEmails: o.ExcludedEmails, ExcludedURIs: o.ExcludedURIs, ExcludedIPs: o.ExcludedIPs,
	}
}

// Permits reports whether k has any permitted subtree.
func (k Constraints) Permits() bool { return k.permits() }

func (k Constraints) permits() bool {
	return len(k.PermittedDNS)+len(k.PermittedEmails)+len(k.PermittedURIs)+len(k.PermittedIPs) > 0
}

// Empty reports whether k constrains nothing.
func (k Constraints) Empty() bool {
	return !k.permits() && len(k.ExcludedDNS)+len(k.ExcludedEmails)+len(k.ExcludedURIs)+len(k.ExcludedIPs) == 0
}

// validateConstraints checks the name constraints of o.
func (o *InitOptions) validateConstraints() error { return o.constraints().Validate() }

// Validate checks every subtree of k.
func (k Constraints) Validate() error {
	for _, t := range []struct {
		what     string
		dns, uri []string
		emails   []string
	}{{"permitted", k.PermittedDNS, k.PermittedURIs, k.PermittedEmails}, {"excluded", k.ExcludedDNS, k.ExcludedURIs, k.ExcludedEmails}} {
		for _, d := range t.dns {
			if err := validateDomainConstraint(t.what, "DNS", d); err != nil {
				return err
			}
		}
		for _, e := range t.emails {
			if err := validateEmailConstraint(t.what, e); err != nil {
				return err
			}
		}
		for _, d := range t.uri {
			if err := validateDomainConstraint(t.what, "URI", strings.TrimPrefix(d, ".")); err != nil {
				return err
			}
		}
	}
	return nil
}

// validateDomainConstraint checks a permitted or excluded DNS or URI domain.
func validateDomainConstraint(what, kind, d string) error {
	if strings.HasPrefix(d, "*.") {
		return fmt.Errorf("%s %s domain %q: want a domain such as example.com, without a wildcard", what, kind, d)
	}
	if err := ValidateDNSName(d); err != nil {
		return fmt.Errorf("%s %s domain: %w", what, kind, err)
	}
	return nil
}

// validateEmailConstraint checks an email constraint: a mailbox
// (user@example.com), a host (example.com) or a domain (.example.com).
func validateEmailConstraint(what, c string) error {
	if strings.Contains(c, "@") {
		return ValidateEmail(c)
	}
	if err := ValidateDNSName(strings.TrimPrefix(c, ".")); err != nil {
		return fmt.Errorf("%s email domain: %w", what, err)
	}
	return nil
}

// setNameConstraints writes the critical name constraints k into the CA
// template (RFC 5280 4.2.1.10). When any permitted subtree is given, every
// name type without one is excluded: IP addresses by 0.0.0.0/0 and ::/0,
// the others by noNames; exclusions asked for such a type add nothing and
// are left out.
func setNameConstraints(tmpl *x509.Certificate, k Constraints) {
	if k.Empty() {
		return
	}
	tmpl.PermittedDNSDomainsCritical = true
	if !k.permits() {
		tmpl.ExcludedDNSDomains = k.ExcludedDNS
		tmpl.ExcludedEmailAddresses = k.ExcludedEmails
		tmpl.ExcludedURIDomains = k.ExcludedURIs
		tmpl.ExcludedIPRanges = k.ExcludedIPs
		return
	}
	tmpl.PermittedDNSDomains, tmpl.ExcludedDNSDomains = permitOrExclude(k.PermittedDNS, k.ExcludedDNS)
	tmpl.PermittedEmailAddresses, tmpl.ExcludedEmailAddresses = permitOrExclude(k.PermittedEmails, k.ExcludedEmails)
	tmpl.PermittedURIDomains, tmpl.ExcludedURIDomains = permitOrExclude(k.PermittedURIs, k.ExcludedURIs)
	tmpl.PermittedIPRanges = k.PermittedIPs
	tmpl.ExcludedIPRanges = k.ExcludedIPs
	if len(k.PermittedIPs) == 0 {
		tmpl.ExcludedIPRanges = []*net.IPNet{
			{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)},
			{IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)},
		}
	}
}

func permitOrExclude(permitted, excluded []string) (permit, exclude []string) {
	if len(permitted) == 0 {
		return []string{noNames}, []string{noNames}
	}
	return permitted, excluded
}

// ConstraintsOf reads the name constraints of a CA certificate back.
func ConstraintsOf(cert *x509.Certificate) Constraints {
	return Constraints{
		PermittedDNS: cert.PermittedDNSDomains, PermittedEmails: cert.PermittedEmailAddresses,
		PermittedURIs: cert.PermittedURIDomains, PermittedIPs: cert.PermittedIPRanges,
		ExcludedDNS: cert.ExcludedDNSDomains, ExcludedEmails: cert.ExcludedEmailAddresses,
		ExcludedURIs: cert.ExcludedURIDomains, ExcludedIPs: cert.ExcludedIPRanges,
	}
}

// checkCarries refuses a CA certificate whose name constraints are not
// exactly those that k asks for, as setNameConstraints writes them, naming
// the first difference.
func checkCarries(cert *x509.Certificate, k Constraints) error {
	var want x509.Certificate
	setNameConstraints(&want, k)
	for _, f := range []struct {
		what      string
		got, want []string
	}{
		{"permitted DNS domains", cert.PermittedDNSDomains, want.PermittedDNSDomains},
		{"excluded DNS domains", cert.ExcludedDNSDomains, want.ExcludedDNSDomains},
		{"permitted email constraints", cert.PermittedEmailAddresses, want.PermittedEmailAddresses},
		{"excluded email constraints", cert.ExcludedEmailAddresses, want.ExcludedEmailAddresses},
		{"permitted URI domains", cert.PermittedURIDomains, want.PermittedURIDomains},
		{"excluded URI domains", cert.ExcludedURIDomains, want.ExcludedURIDomains},
		{"permitted IP ranges", ipStrings(cert.PermittedIPRanges), ipStrings(want.PermittedIPRanges)},
		{"excluded IP ranges", ipStrings(cert.ExcludedIPRanges), ipStrings(want.ExcludedIPRanges)},
	} {
		if !sameFoldedSet(f.got, f.want) {
			return fmt.Errorf("its %s are [%s], but [%s] were asked for", f.what, strings.Join(f.got, ", "), strings.Join(f.want, ", "))
		}
	}
	if !k.Empty() && !cert.PermittedDNSDomainsCritical {
		return errors.New("its name constraints are not marked critical")
	}
	return nil
}

func ipStrings(nets []*net.IPNet) []string {
	out := make([]string, len(nets))
	for i, n := range nets {
		out[i] = n.String()
	}
	return out
}

// sameFoldedSet reports whether a and b hold the same names, ignoring case,
// order and repeats.
func sameFoldedSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	for i := range a {
		a[i] = strings.ToLower(a[i])
	}
	for i := range b {
		b[i] = strings.ToLower(b[i])
	}
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// checkNameConstraints refuses a leaf with a name that a verifier would
// refuse under the CA's name constraints (RFC 5280 4.2.1.10), before
// anything is signed. It follows the CA certificate: a CA created before
// minica excluded the name types without a permitted subtree leaves them
// unconstrained. Where Go and OpenSSL match differently, it takes the
// stricter.
func checkNameConstraints(ca *x509.Certificate, leaf *x509.Certificate) error {
	dns := dnsConstraint(ca)
	email := nameConstraint{kind: "email", plural: "emails", what: "email domains",
		permitted: ca.PermittedEmailAddresses, excluded: ca.ExcludedEmailAddresses, match: matchEmail}
	// OpenSSL matches a URI domain without a leading dot exactly, Go also
	// its subdomains.
	uri := nameConstraint{kind: "URI", plural: "URIs", what: "URI domains",
		permitted: ca.PermittedURIDomains, excluded: ca.ExcludedURIDomains, match: matchURIHost, matchExcluded: matchDNS}
	for _, name := range leaf.DNSNames {
		if err := dns.check(name, name); err != nil {
			return err
		}
	}
	// OpenSSL checks a common name that looks like a host name as a DNS
	// name when the certificate has none (NAME_CONSTRAINTS_check_CN).
	if cn := leaf.Subject.CommonName; len(leaf.DNSNames) == 0 && looksLikeHostName(cn) {
		if err := dns.check(cn, cn); err != nil {
			return fmt.Errorf("common name%s: OpenSSL checks a common name that looks like a host name against the DNS constraints when the certificate has no DNS name; pass a common name without a dot",
				strings.TrimPrefix(err.Error(), "DNS name"))
		}
	}
	for _, e := range leaf.EmailAddresses {
		if err := email.check(e, e); err != nil {
			return err
		}
	}
	for _, u := range leaf.URIs {
		if len(uri.permitted)+len(uri.excluded) == 0 {
			break
		}
		host := u.Hostname()
		if host == "" || net.ParseIP(host) != nil {
			return fmt.Errorf("URI %q has no host name to check against the CA's URI constraints", u)
		}
		if err := uri.check(u.String(), host); err != nil {
			return err
		}
	}
	for _, ip := range leaf.IPAddresses {
		if err := checkIP(ca, ip); err != nil {
			return err
		}
	}
	return nil
}

// fitServerCommonName drops the common name of a server certificate without
// DNS names under a CA that constrains DNS names, unless it is within them:
// GnuTLS checks such a certificate's common name as a DNS name, whatever it
// looks like, and OpenSSL one that looks like a host name, so either would
// refuse it. The names stay in the subjectAltName, which Go marks critical
// when the subject is left empty (RFC 5280 4.2.1.6).
func fitServerCommonName(ca, tmpl *x509.Certificate) {
	cn := tmpl.Subject.CommonName
	if cn == "" || len(tmpl.DNSNames) > 0 || !slices.Contains(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth) {
		return
	}
	if dns := dnsConstraint(ca); dns.check(cn, cn) != nil {
		tmpl.Subject.CommonName = ""
	}
}

func dnsConstraint(ca *x509.Certificate) nameConstraint {
	return nameConstraint{kind: "DNS name", plural: "DNS names", what: "DNS domains",
		permitted: ca.PermittedDNSDomains, excluded: ca.ExcludedDNSDomains, match: matchDNS}
}

// nameConstraint is the permitted and excluded subtrees of one name type.
type nameConstraint struct {
	kind, plural, what  string // "DNS name", "DNS names", "DNS domains"
	permitted, excluded []string
	// match tells whether constraint c covers name (lowercase), for the
	// permitted subtrees and, without matchExcluded, the excluded ones.
	match, matchExcluded func(c, name string) bool
}

// check refuses name (shown as shown) if it is not within the permitted
// subtrees or is within an excluded one.
func (nc nameConstraint) check(shown, name string) error {
	if len(nc.excluded) == 1 && nc.excluded[0] == noNames && len(nc.permitted) == 1 && nc.permitted[0] == noNames {
		return mark(fmt.Errorf("%s %q is outside the CA's name constraints, which permit no %s", nc.kind, shown, nc.plural), ErrTypeNotPermitted)
	}
	if len(nc.permitted) > 0 && !anyMatch(nc.permitted, name, nc.match) {
		return fmt.Errorf("%s %q is outside the CA's permitted %s (%s)", nc.kind, shown, nc.what, strings.Join(nc.permitted, ", "))
	}
	matchExcluded := nc.matchExcluded
	if matchExcluded == nil {
		matchExcluded = nc.match
	}
	if anyMatch(nc.excluded, name, matchExcluded) {
		return fmt.Errorf("%s %q is within the CA's excluded %s (%s)", nc.kind, shown, nc.what, strings.Join(nc.excluded, ", "))
	}
	return nil
}

func checkIP(ca *x509.Certificate, ip net.IP) error {
	for _, r := range ca.ExcludedIPRanges {
		if r.Contains(ip) {
			if ones, _ := r.Mask.Size(); ones == 0 {
				return mark(fmt.Errorf("IP address %s is outside the CA's name constraints, which permit no IP addresses", ip), ErrTypeNotPermitted)
			}
			return fmt.Errorf("IP address %s is within the CA's excluded IP range %s", ip, r)
		}
	}
	if len(ca.PermittedIPRanges) > 0 && !ipPermitted(ca.PermittedIPRanges, ip) {
		ranges := make([]string, len(ca.PermittedIPRanges))
		for i, r := range ca.PermittedIPRanges {
			ranges[i] = r.String()
		}
		return fmt.Errorf("IP address %s is outside the CA's permitted IP ranges (%s)", ip, strings.Join(ranges, ", "))
	}
	return nil
}

func anyMatch(constraints []string, name string, match func(c, name string) bool) bool {
	for _, c := range constraints {
		if match(strings.ToLower(c), strings.ToLower(name)) {
			return true
		}
	}
	return false
}

// matchDNS: "example.com" permits itself and every subdomain; ".example.com"
// only subdomains; "" every name (RFC 5280, Go and OpenSSL agree).
func matchDNS(c, name string) bool {
	name = strings.TrimPrefix(name, "*.")
	if c == "" {
		return true
	}
	if strings.HasPrefix(c, ".") {
		return strings.HasSuffix(name, c)
	}
	return name == c || strings.HasSuffix(name, "."+c)
}

// matchURIHost: "example.com" permits that host only, ".example.com" its
// subdomains (RFC 5280; OpenSSL's reading).
func matchURIHost(c, host string) bool {
	if strings.HasPrefix(c, ".") {
		return len(host) > len(c) && strings.HasSuffix(host, c)
	}
	return host == c
}

// matchEmail: "user@example.com" permits that mailbox, "example.com" every
// mailbox on that host, ".example.com" every mailbox on its subdomains.
func matchEmail(c, email string) bool {
	if strings.Contains(c, "@") {
		return email == c
	}
	host := email[strings.LastIndexByte(email, '@')+1:]
	if strings.HasPrefix(c, ".") {
		return strings.HasSuffix(host, c)
	}
	return host == c
}

func ipPermitted(ranges []*net.IPNet, ip net.IP) bool {
	for _, r := range ranges {
		if r.Contains(ip) {
			return true
		}
	}
	return false
}

// looksLikeHostName tells whether OpenSSL takes a common name for a DNS
// name: letters, digits, '_', '-' and '.', with at least two labels, and no
// '.' or '-' first, last or next to a '.'.
func looksLikeHostName(cn string) bool {
	dot := false
	for i := 0; i < len(cn); i++ {
		c := cn[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_':
		case i == 0 || i == len(cn)-1:
			return false
		case c == '-':
		case c == '.' && cn[i+1] != '.' && cn[i+1] != '-' && cn[i-1] != '-':
			dot = true
		default:
			return false
		}
	}
	return dot
}

package ca

import (
	"fmt"
	"minica/ca/store"
	"net"
	"net/mail"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrNameAt is returned, wrapped, by ValidateName for a name holding "@".
var ErrNameAt = store.ErrNameAt

// ValidateName checks that name can name a certificate: it is used as a
// directory name inside the CA directory, so it must match
// [A-Za-z0-9][A-Za-z0-9._-]{0,63}. That excludes "..", "a/b", ".x" and NUL.
//
// A name holding "@" gets its own error, ErrNameAt: it is usually an email
// address given where a name was wanted.
func ValidateName(name string) error { return store.ValidateName(name) }

// ValidateText checks a value that goes into a certificate subject (what is
// named by field, e.g. "common name"): it must be non-empty, valid UTF-8, at
// most 64 characters (RFC 5280's upper bound for most attributes), and free of
// control, bidirectional-override and other invisible format characters,
// which could make one name display as another.
func ValidateText(field, value string) error {
	if value == "" {
		return fmt.Errorf("empty %s", field)
	}
	if !isCleanText(value) {
		return fmt.Errorf("invalid %s %s: control, bidi or other invisible characters are not allowed", field, printable(value))
	}
	if n := len([]rune(value)); n > 64 {
		return fmt.Errorf("invalid %s %s: %d characters, at most 64 allowed", field, printable(value), n)
	}
	return nil
}

func isCleanText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r == '\uFFFD' || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r) {
			return false
		}
	}
	return true
}

// printable quotes s for an error message without letting control
// characters reach the terminal.
func printable(s string) string {
	return strconv.QuoteToASCII(s)
}

// ParseIP parses an IP address for an iPAddress SAN: IPv4 dotted decimal
// or IPv6, as net.ParseIP reads them. A zone, a CIDR range or anything else
// gives an error quoting the input.
func ParseIP(s string) (net.IP, error) {
	ip := net.ParseIP(s)
	if ip == nil {
		return nil, fmt.Errorf("%s: not an IP address", printable(s))
	}
	return ip, nil
}

// ValidateEmail checks an email address for an rfc822Name SAN: a plain
// ASCII local@domain with a valid host name as domain.
func ValidateEmail(email string) error {
	bad := func(why string) error {
		return fmt.Errorf("invalid email %s: %s", printable(email), why)
	}
	if !isCleanText(email) || strings.ContainsAny(email, " <>\"") {
		return bad("want a plain address such as user@example.com")
	}
	for _, r := range email {
		if r > unicode.MaxASCII {
			return bad("only ASCII addresses are supported")
		}
	}
	addr, err := mail.ParseAddress(email)
	if err != nil || addr.Address != email {
		return bad("want a plain address such as user@example.com")
	}
	at := strings.LastIndexByte(email, '@')
	if err := ValidateDNSName(email[at+1:]); err != nil {
		return bad("its domain is not a valid host name")
	}
	return nil
}

// ValidateDNSName checks a DNS SAN: LDH labels of 1 to 63 characters, at
// most 253 in all, optionally with a leading "*." wildcard label.
func ValidateDNSName(name string) error {
	host := strings.TrimPrefix(name, "*.")
	if len(host) == 0 || len(host) > 253 || strings.HasSuffix(host, ".") {
		return fmt.Errorf("invalid DNS name %s", printable(name))
	}
	for _, label := range strings.Split(host, ".") {
		if !isLDHLabel(label) {
			return fmt.Errorf("invalid DNS name %s: label %s is not 1 to 63 letters, digits or hyphens", printable(name), printable(label))
		}
	}
	return nil
}

func isLDHLabel(label string) bool {
	if len(label) == 0 || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
		return false
	}
	for i := 0; i < len(label); i++ {
		c := label[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// IsHostName reports whether name is a DNS host name with at least one
// letter, so that it can serve as a server certificate's default SAN.
func IsHostName(name string) bool {
	return ValidateDNSName(name) == nil && strings.IndexFunc(name, unicode.IsLetter) >= 0 &&
		net.ParseIP(name) == nil
}

// DNSReach is what a DNS name's shape alone says about who can resolve it.
type DNSReach int

const (
	// ReachDNS is a name of two or more labels, or "localhost": the DNS
	// resolves it or, in the namespaces reserved for private and test use
	// (.localhost, .local, .internal, .test, .example, .home.arpa), whoever
	// chose it has set it up.
	ReachDNS DNSReach = iota
	// ReachSearchDomain is a single label such as "web2": it resolves only
	// where a search domain or a hosts file completes it.
	ReachSearchDomain
	// ReachNowhere is a name under "invalid", which never resolves
	// (RFC 6761, section 6.4).
	ReachNowhere
)

// DNSNameReach judges a DNS SAN by its shape; it makes no lookup, so that
// issuing never waits on the network nor depends on the issuing host's
// resolver, which need not be the clients'. A wildcard is judged by the
// name under it.
func DNSNameReach(name string) DNSReach {
	host := strings.ToLower(strings.TrimPrefix(name, "*."))
	switch {
	case host == "invalid" || strings.HasSuffix(host, ".invalid"):
		return ReachNowhere
	case host == "localhost" || strings.Contains(host, "."):
		return ReachDNS
	}
	return ReachSearchDomain
}

// UnresolvableNames returns the DNS names among sans (as SANs lists them)
// when they are all a client could reach the server by and none has
// DNSNameReach ReachDNS: a server certificate for "web2" alone serves only
// clients that complete "web2" as the issuing host does. It returns nil
// when sans hold an IP address, a DNS name of ReachDNS, or no DNS name.
func UnresolvableNames(sans []string) []string {
	var names []string
	for _, s := range sans {
		if strings.HasPrefix(s, "ip:") {
			return nil
		}
		name, ok := strings.CutPrefix(s, "dns:")
		if !ok {
			continue
		}
		if DNSNameReach(name) == ReachDNS {
			return nil
		}
		names = append(names, name)
	}
	return names
}

// ValidateURI checks a URI SAN: absolute, with a scheme, and printable ASCII.
func ValidateURI(raw string) (*url.URL, error) {
	for _, r := range raw {
		if r <= ' ' || r > '~' {
			return nil, fmt.Errorf("invalid URI %s: only printable ASCII is allowed", printable(raw))
		}
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || (u.Host == "" && u.Opaque == "") {
		return nil, fmt.Errorf("invalid URI %s: want an absolute URI such as spiffe://example.org/svc", printable(raw))
	}
	return u, nil
}

package validate

import (
	"fmt"
	"net/netip"
	"strings"
)

// target is where the challenges of one identifier connect: host for the
// URL and the dial, ip when the identifier is an address.
type target struct {
	id   Identifier
	host string
	ip   netip.Addr
}

// targetOf checks id for http-01 and tls-alpn-01: a name (no wildcard,
// which only dns-01 validates, RFC 8555 section 7.1.3) or an address.
// Whether the CA may issue for it is ca.ACMEPolicy's business, not this.
func targetOf(id Identifier) (target, error) {
	switch id.Type {
	case "dns":
		if strings.HasPrefix(id.Value, "*.") {
			return target{}, rejected("wildcard identifier %q: only dns-01 validates a wildcard", id.Value)
		}
		if err := checkName(id.Value); err != nil {
			return target{}, err
		}
		return target{id: id, host: id.Value}, nil
	case "ip":
		a, err := netip.ParseAddr(id.Value)
		if err != nil || a.Zone() != "" {
			return target{}, rejected("ip identifier %q: want an IPv4 or IPv6 address without zone", id.Value)
		}
		a = a.Unmap()
		return target{id: id, host: a.String(), ip: a}, nil
	}
	return target{}, rejected("identifier type %q: want dns or ip", id.Type)
}

// checkName accepts a DNS name of letters, digits, '-' and '_' labels, so
// that it can go into a URL, an SNI and a query unchanged.
func checkName(name string) error {
	if _, err := netip.ParseAddr(name); err == nil {
		return rejected("dns identifier %q is an IP address: want an ip identifier (RFC 8738)", name)
	}
	if name == "" || len(name) > 253 {
		return rejected("dns identifier %q: want a name of 1 to 253 characters", name)
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" || len(label) > 63 || strings.IndexFunc(label, notLDH) >= 0 {
			return rejected("dns identifier %q: label %q is not 1 to 63 letters, digits, '-' or '_'", name, label)
		}
	}
	return nil
}

func notLDH(r rune) bool {
	return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
}

func rejected(format string, args ...any) *Error {
	return &Error{Type: TypeRejectedIdentifier, Detail: fmt.Sprintf(format, args...)}
}

// reverseName is the reverse-DNS name of a, without the final dot: the
// SNI of tls-alpn-01 for an ip identifier (RFC 8738 section 6).
func reverseName(a netip.Addr) string {
	if a.Is4() {
		b := a.As4()
		return fmt.Sprintf("%d.%d.%d.%d.in-addr.arpa", b[3], b[2], b[1], b[0])
	}
	var s strings.Builder
	b := a.As16()
	for i := len(b) - 1; i >= 0; i-- {
		fmt.Fprintf(&s, "%x.%x.", b[i]&0xf, b[i]>>4)
	}
	s.WriteString("ip6.arpa")
	return s.String()
}

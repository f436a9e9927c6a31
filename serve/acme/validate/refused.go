package validate

import (
	"context"
	"fmt"
	"net/netip"
	"syscall"
)

// DefaultRefused returns the address ranges a Validator never connects to
// unless Config.Allow names them: unspecified, loopback, link-local (where
// cloud metadata endpoints such as 169.254.169.254 live), multicast and
// reserved/broadcast. Private ranges (10/8, 172.16/12, 192.168/16,
// fc00::/7) are not refused: minica is a CA for internal networks.
// IPv4-mapped IPv6 addresses are judged as the IPv4 address they map.
// Each call returns a new slice.
func DefaultRefused() []netip.Prefix {
	return []netip.Prefix{
		netip.MustParsePrefix("0.0.0.0/8"),      // "this network", unspecified
		netip.MustParsePrefix("::/128"),         // unspecified
		netip.MustParsePrefix("127.0.0.0/8"),    // loopback
		netip.MustParsePrefix("::1/128"),        // loopback
		netip.MustParsePrefix("169.254.0.0/16"), // link-local, cloud metadata
		netip.MustParsePrefix("fe80::/10"),      // link-local
		netip.MustParsePrefix("224.0.0.0/4"),    // multicast
		netip.MustParsePrefix("ff00::/8"),       // multicast
		netip.MustParsePrefix("240.0.0.0/4"),    // reserved, and broadcast
	}
}

// refusedError is a connection refused by policy before it was made.
type refusedError struct {
	addr  netip.AddrPort
	in    netip.Prefix // the refused range; invalid when addr did not parse
	input string
}

func (e *refusedError) Error() string {
	if !e.in.IsValid() {
		return fmt.Sprintf("connection to %q refused: not an IP address and port", e.input)
	}
	return fmt.Sprintf("connection to %s refused: %s is in the refused range %s",
		e.addr, e.addr.Addr(), e.in)
}

// refusal returns the refused range that holds a, or false when a may be
// connected to. Allow wins over refused.
func (v *Validator) refusal(a netip.Addr) (netip.Prefix, bool) {
	a = a.Unmap().WithZone("")
	for _, p := range v.allow {
		if p.Contains(a) {
			return netip.Prefix{}, false
		}
	}
	for _, p := range v.refused {
		if p.Contains(a) {
			return p, true
		}
	}
	return netip.Prefix{}, false
}

// control is the dialer's check of the address it is about to connect to,
// after name resolution and before connect(2): the one place where the
// address policy holds, for the first request, every redirect and every
// answer of DNS.
func (v *Validator) control(_ context.Context, _, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &refusedError{input: address}
	}
	if p, refused := v.refusal(ap.Addr()); refused {
		return &refusedError{addr: ap, in: p, input: address}
	}
	return nil
}

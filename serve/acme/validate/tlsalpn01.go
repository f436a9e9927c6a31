package validate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// acmeTLS1 is the ALPN protocol of tls-alpn-01 (RFC 8737 section 6.2).
const acmeTLS1 = "acme-tls/1"

var (
	oidACMEIdentifier = asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 1, 31} // RFC 8737 section 6.1
	oidSAN            = asn1.ObjectIdentifier{2, 5, 29, 17}
)

// TLSALPN01 validates a tls-alpn-01 challenge (RFC 8737; RFC 8738 for ip
// identifiers): a handshake with ID:TLSPort must negotiate acme-tls/1 and
// present the validation certificate for id and keyAuthorization, as the
// package doc says. It returns nil when valid, else an *Error.
func (v *Validator) TLSALPN01(ctx context.Context, id Identifier, keyAuthorization string) error {
	t, err := targetOf(id)
	if err != nil {
		return err
	}
	ctx, cancel := v.bound(ctx)
	defer cancel()
	addr := net.JoinHostPort(t.host, strconv.Itoa(v.cfg.TLSPort))
	conn, err := v.dial(ctx, "tcp", addr)
	if err != nil {
		return v.failure(ctx, TypeConnection, "connecting to "+addr, err)
	}
	defer conn.Close()
	state, err := v.handshake(ctx, conn, t.sni())
	if err != nil {
		return v.failure(ctx, TypeTLS, fmt.Sprintf("TLS handshake with %s for %s", addr, t.sni()), err)
	}
	if state.NegotiatedProtocol != acmeTLS1 {
		return &Error{Type: TypeUnauthorized,
			Detail: fmt.Sprintf("%s negotiated protocol %q; want %q", addr, state.NegotiatedProtocol, acmeTLS1)}
	}
	if err := checkALPNCertificate(state.PeerCertificates, t, keyAuthorization); err != nil {
		return &Error{Type: TypeIncorrectResponse, Detail: addr + " presented " + err.Error()}
	}
	return nil
}

// sni is the server name of tls-alpn-01: the name, or for an address its
// reverse-DNS name (RFC 8738 section 6).
func (t target) sni() string {
	if t.ip.IsValid() {
		return reverseName(t.ip)
	}
	return t.host
}

// handshake runs the client side of TLS on conn within TLSTimeout,
// offering acme-tls/1 only. The certificate is checked by the caller.
func (v *Validator) handshake(ctx context.Context, conn net.Conn, sni string) (tls.ConnectionState, error) {
	hctx, cancel := context.WithTimeoutCause(ctx, v.cfg.TLSTimeout, errTLSTimeout)
	defer cancel()
	tc := tls.Client(conn, &tls.Config{
		ServerName:         sni,
		NextProtos:         []string{acmeTLS1},
		MinVersion:         tls.VersionTLS12,
		InsecureSkipVerify: true, // the validation certificate is self-signed; checked below
	})
	if err := tc.HandshakeContext(hctx); err != nil {
		if ctx.Err() == nil && context.Cause(hctx) == errTLSTimeout {
			return tls.ConnectionState{}, fmt.Errorf("no handshake within %v: %w", v.cfg.TLSTimeout, err)
		}
		return tls.ConnectionState{}, err
	}
	return tc.ConnectionState(), nil
}

var errTLSTimeout = errors.New("TLS handshake time spent")

// checkALPNCertificate checks the validation certificate of RFC 8737
// section 3: alone, one subjectAltName that is the identifier, and the
// critical acmeIdentifier extension holding SHA-256(keyAuthorization).
// Its error completes "ADDR presented ".
func checkALPNCertificate(certs []*x509.Certificate, t target, keyAuthorization string) error {
	if len(certs) != 1 {
		return fmt.Errorf("%d certificates; want one, the self-signed validation certificate", len(certs))
	}
	c := certs[0]
	if err := checkSAN(c, t); err != nil {
		return err
	}
	ext, ok := extension(c, oidACMEIdentifier)
	if !ok {
		return fmt.Errorf("a certificate without the acmeIdentifier extension (%v)", oidACMEIdentifier)
	}
	if !ext.Critical {
		return errors.New("a certificate whose acmeIdentifier extension is not critical; want critical")
	}
	var got []byte
	if rest, err := asn1.Unmarshal(ext.Value, &got); err != nil || len(rest) > 0 {
		return errors.New("a certificate whose acmeIdentifier extension is not one OCTET STRING")
	}
	if want := sha256.Sum256([]byte(keyAuthorization)); !bytes.Equal(got, want[:]) {
		return fmt.Errorf("a certificate whose acmeIdentifier is %x; want %x, the SHA-256 of the key authorization", got, want)
	}
	return nil
}

// checkSAN checks that c names t and nothing else: one subjectAltName
// entry, of any type, counted in the extension itself since crypto/x509
// drops the types it does not know.
func checkSAN(c *x509.Certificate, t target) error {
	var names []asn1.RawValue
	if ext, ok := extension(c, oidSAN); ok {
		if rest, err := asn1.Unmarshal(ext.Value, &names); err != nil || len(rest) > 0 {
			return errors.New("a certificate whose subjectAltName does not parse")
		}
	}
	want, ok := "dNSName "+t.host, len(c.DNSNames) == 1 && strings.EqualFold(c.DNSNames[0], t.host)
	if t.ip.IsValid() {
		want, ok = "iPAddress "+t.host, len(c.IPAddresses) == 1 && addrOf(c.IPAddresses[0]) == t.ip
	}
	if len(names) != 1 || !ok {
		return fmt.Errorf("a certificate for %s (%d subjectAltName entries); want exactly one, %s",
			strings.Join(sans(c), ", "), len(names), want)
	}
	return nil
}

func extension(c *x509.Certificate, id asn1.ObjectIdentifier) (pkix.Extension, bool) {
	for _, e := range c.Extensions {
		if e.Id.Equal(id) {
			return e, true
		}
	}
	return pkix.Extension{}, false
}

func addrOf(ip net.IP) netip.Addr {
	a, _ := netip.AddrFromSlice(ip)
	return a.Unmap()
}

// sans lists the names of c that crypto/x509 knows, for an error.
func sans(c *x509.Certificate) []string {
	var out []string
	out = append(out, c.DNSNames...)
	for _, ip := range c.IPAddresses {
		out = append(out, ip.String())
	}
	out = append(out, c.EmailAddresses...)
	for _, u := range c.URIs {
		out = append(out, u.String())
	}
	if len(out) == 0 {
		return []string{"no name"}
	}
	return out
}

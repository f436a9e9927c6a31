// Package validate is the challenge validator of minica's ACME server: it
// checks that whoever asks for a certificate controls the identifier, by
// http-01 and dns-01 (RFC 8555 section 8), tls-alpn-01 (RFC 8737), and for
// ip identifiers (RFC 8738) by http-01 and tls-alpn-01. The server calls a
// Validator once a client says a challenge is ready; every method returns
// nil for a valid challenge or an *Error whose Type is the ACME error type
// to report.
//
// Whether the CA may issue for an identifier is decided before, by
// ca.ACMEPolicy; this package only proves control, and refuses to be
// turned against the network it runs in.
//
// # Refused addresses
//
// An ACME client chooses the names, the DNS answers and the redirects the
// validator follows, so it could make minica's server connect to addresses
// that only that server can reach. Every connection, the first one, each
// redirect's and each address of a name, is checked at dial time, on the
// address actually connected to (net.Dialer.ControlContext, before
// connect), so neither a redirect nor a DNS answer that changes between
// two lookups (rebinding) escapes the check. Refused by default
// (DefaultRefused), unless Config.Allow holds the address:
//
//	0.0.0.0/8, ::/128         unspecified
//	127.0.0.0/8, ::1/128      loopback: the server's own services
//	169.254.0.0/16, fe80::/10 link-local: the cloud metadata endpoints
//	                          (169.254.169.254, also fe80:: and IPv4
//	                          link-local on some clouds) hand out
//	                          instance credentials to any local request
//	224.0.0.0/4, ff00::/8     multicast
//	240.0.0.0/4               reserved, and broadcast 255.255.255.255
//
// and the IPv4-mapped IPv6 forms of these (an address is unmapped before
// it is judged). Private ranges (10/8, 172.16/12, 192.168/16, fc00::/7)
// are allowed: minica is a private CA, its names live on internal
// networks. A refused address fails with TypeRejectedIdentifier, whether
// it is the identifier itself, an address its name resolves to, or the
// target of a redirect.
//
// # http-01
//
// GET http://NAME:HTTPPort/.well-known/acme-challenge/TOKEN (an ip
// identifier's address in place of NAME, in brackets for IPv6), with no
// proxy from the environment and no connection reuse. The body, without
// trailing whitespace, must equal the key authorization; a body longer than
// MaxBody is an error, and no more than MaxBody+1 bytes of it are read.
//
// Redirects are followed at most MaxRedirects times, and only to http URLs
// on HTTPPort or https URLs on TLSPort (a URL without a port has its
// scheme's default port, 80 or 443): validation never follows a redirect
// off the configured ports, so a client cannot point minica at another
// service of a host. A redirect to another port or scheme, a loop, or one
// redirect too many fail with TypeConnection. The certificate of an https
// target is not verified, as by Let's Encrypt: the body proves control.
//
// # tls-alpn-01
//
// A TLS 1.2+ handshake with NAME:TLSPort offering only the protocol
// "acme-tls/1", with the SNI NAME (for an ip identifier, its reverse-DNS
// name, e.g. 1.0.0.127.in-addr.arpa), which must negotiate acme-tls/1 and
// present exactly one certificate, the self-signed validation certificate:
// one subjectAltName entry, the identifier (dNSName or iPAddress), and the
// critical acmeIdentifier extension (1.3.6.1.5.5.7.1.31) holding an OCTET
// STRING of the SHA-256 of the key authorization. The certificate is not
// otherwise verified.
//
// # dns-01
//
// The TXT records of _acme-challenge.NAME (of a wildcard "*.NAME" too), of
// which one must be the unpadded base64url SHA-256 of the key
// authorization. Only dns identifiers; an ip identifier is rejected.
//
// # Resolution and limits
//
// Names are resolved by Go's own resolver (the hosts file, then DNS),
// asking Config.Resolver when set, else the servers of resolv.conf, always
// as absolute names so that no search domain applies. Every method is
// bounded by its context and by Config.Total, each connect by
// ConnectTimeout and each TLS handshake by TLSTimeout.
package validate

// Package identity is what minica tells an upstream about a verified
// client: the client's [Identity], read from its certificate, and the
// header profiles that render it on the wire.
//
// The proxy builds an Identity with [New] once a client's chain is
// verified (this package verifies nothing), renders it with the [Headers]
// of its profile, and strips the [Namespace] of those headers from every
// inbound request first. Package serverconf reads the same profiles
// ([ProfileNames], [HeaderFields]) to make nginx, Apache and HAProxy send
// the same headers; a policy (package proxy/policy) matches its rules
// against an Identity. It imports none of them: the proxy, the policy and
// serverconf import it, which is why it is a package of its own.
//
// # The identity
//
// CN, email (the first rfc822Name SAN, else the DN's emailAddress), O, OU,
// the subject and issuer DN as RFC 4514 strings with OpenSSL's escaping
// (nginx's $ssl_client_s_dn, mod_ssl's SSL_CLIENT_S_DN, not Go's
// pkix.Name.String), the SANs, the serial in OpenSSL's hex ([SerialHex]),
// the SHA-256 and SHA-1 fingerprints, the validity, the certificate and
// its chain, and the days it has left ([DaysLeft]), which the caller sets.
//
// # Headers
//
// A profile is a fixed list of header names and the fields they carry:
// minica's own, Apache mod_ssl's, nginx's, Envoy's XFCC and RFC 9440's
// Client-Cert ([Profiles]); custom NAME=FIELD headers add to it or replace
// one of its names ([FieldNames]). Values never hold a control character
// or a raw non-ASCII byte: each field has its encoding (see encode.go and
// docs/proxy.md), and a value that somehow is not wire-safe is
// percent-encoded rather than sent.
//
// # Namespace
//
// No inbound header may pose as an identity header: the namespace holds
// X-SSL-Client-*, Client-Cert*, X-Forwarded-*, Forwarded, and every name
// of every profile and custom header, compared case-insensitively with '_'
// read as '-' (as CGI, PHP and Django read them).
//
// Everything here is immutable once built and safe for concurrent use. A
// proxy renders a client's headers once per connection (again when the
// days left change); Namespace.Holds runs on every inbound header of every
// request and does not allocate.
package identity

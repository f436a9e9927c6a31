// Package renew is serve's online renewal, and the first certificate by
// bootstrap token: the http.Handler of POST /renew, /renew/keygen and
// /bootstrap on serve's HTTPS listener.
//
// A [Renewer] answers POST /renew: a client presents its current
// certificate in the TLS handshake and sends a CSR, and gets the
// certificate's successor, issued by ca.CA.Renew as `minica renew`
// issues one (same name, profile, subject, SANs and lifetime, records
// linked both ways). The client certificate is judged by revoke.Judge, as
// the proxy and `minica verify` judge one: chain to this CA, validity,
// CA:FALSE, the extended key usage of its profile, the CRL being served and
// the revocation log. Then ca.CheckRenewable and ca.CheckRenewalCSR refuse
// a record that is not renewable and a CSR that asks for another identity,
// key usage or CA:TRUE. POST /renew/keygen (Config.Keygen) sends no CSR:
// serve makes the new key pair. See docs/serve.md for the wire format;
// refusals are RFC 9457 problem details whose "reason" is one of the
// Refuse* values.
//
// POST /bootstrap (TokenPath) needs no client certificate: a machine
// sends a one-time bootstrap token of `minica token` in the header
// "Authorization: Bearer TOKEN" (never in the URL or the body) and a CSR
// for its own key, and gets the token's certificate, issued by
// ca.CA.RedeemToken, with the names the token holds. A CSR refused leaves
// the token good; failed tries (a token that matches nothing, or a spent
// one) are bounded per source address and in total
// (serve/internal/ratelimit). The token is never logged or echoed: the
// log names the enrollment's ID once the token matched one. The machine
// then renews at /renew with the certificate it got.
//
// The Renewer works over package ca and package revoke; the CRL it judges
// by is the one serve serves (Config.CRL, the Server's CRL). cmd/minica
// makes it and hands it to package serve as serve.Config.Renew; without
// one serve answers these paths with ServeDisabled's refusal
// (ServeBootstrapDisabled's for /bootstrap).
package renew

// Package renew is serve's online renewal, the http.Handler of POST
// /renew and /renew/keygen on serve's HTTPS listener.
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
// The Renewer works over package ca and package revoke; the CRL it judges
// by is the one serve serves (Config.CRL, the Server's CRL). cmd/minica
// makes it and hands it to package serve as serve.Config.Renew; without
// one serve answers these paths with ServeDisabled's refusal.
package renew

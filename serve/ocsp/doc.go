// Package ocsp is serve's OCSP responder: [Responder] answers OCSP
// requests (RFC 6960) sent by POST, or by GET in the RFC 5019 form
// /ocsp/{url-escaped base64 of the DER request}, about certificates of one
// CA. The status comes from the CA's issuance database, one record read by
// serial (ca.CA.Record, whichever store the CA uses): a valid or expired
// certificate is good, a revoked one revoked with its time and reason
// (certificateHold included), and a serial minica never issued (or only
// reserved) unknown. A request about another issuer gets unauthorized; one
// that does not parse, asks about more than one certificate (RFC 5019
// section 2.1.1), carries a nonce longer than 32 octets (RFC 8954) or is
// larger than MaxRequest gets malformedRequest. OCSP errors travel in a 200
// response, as RFC 6960 appendix A.1 has it.
//
// Responses are signed by a delegated responder (RFC 6960 section 4.2.2.2)
// by default: a certificate of profile ca.OCSP (EKU OCSPSigning,
// id-pkix-ocsp-nocheck, ca.DefaultOCSPResponderValidity) that the responder
// issues itself under the name ResponderName, recorded in the database
// like every certificate the CA signs, and reused across restarts. It is
// renewed once less than Config.RenewBefore of it is left. Without the CA
// key (serve --no-sign) the newest responder certificate in the database is
// used until it expires; after that every answer is tryLater. With
// SignWithCAKey the CA key signs the responses itself, which puts the CA key
// to work on every uncached request.
//
// A response is cached per request and reused until CRLChanged is called (the
// server calls it whenever a new CRL is published or the revocation log
// changes) or half its validity has passed, whichever comes first; a request
// with a nonce gets a fresh response that echoes it and is not cached, and
// an unknown serial is not cached either. thisUpdate is the time of signing
// and nextUpdate ResponseValidity later, never after the responder
// certificate expires. A GET answer carries an ETag (the digest of the DER)
// and an If-None-Match naming it gets a 304. Signatures made on demand take
// one of signSlots (half the CPUs), so that a flood of requests that must be
// signed leaves CPU to cached answers.
//
// golang.org/x/crypto/ocsp builds no response extensions and stamps
// producedAt from the system clock, so responses are encoded here, to put
// the nonce where RFC 6960 section 4.4.1 and OpenSSL look for it (the
// responseExtensions) and to honour the injected clock.
//
// The answer is built as data (Responder.Answer, an httpreply.Reply) and
// written by the HTTP server that carries the request: net/http through
// ServeHTTP on serve's main listeners, fasthttp on the dedicated OCSP
// listener (serve/internal/fastocsp).
//
// It works over package ca and package revoke. cmd/minica makes the
// Responder and hands it to package serve as serve.Config.OCSP, with
// CRLChanged as the Server's OnCRLChange and WriteMetrics as its
// ExtraMetrics.
package ocsp

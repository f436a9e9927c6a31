// Package revoke holds revocation records, builds X.509 v2 certificate
// revocation lists, and checks certificates against them.
//
// It is bytes in, bytes out: nothing here reads or writes the CA directory,
// so that a CRL from a file, a URL or a database is judged alike.
//
// # Building
//
// [Build] streams [Entry] values into a DER CRL signed by a [crypto.Signer]
// (RFC 5280 section 5). It encodes with golang.org/x/crypto/cryptobyte and
// hand-written DER for the entries instead of x509.CreateRevocationList, so
// that a CRL with a million entries needs a single output buffer rather than
// a parsed copy of every entry.
//
// # Checking
//
// [ParseCRL] verifies a PEM or DER CRL against its issuer and keeps only a
// compact sorted table of the revoked serials, smaller than the DER itself.
// It accepts only a complete CRL for client certificates: a delta CRL, or
// one whose issuing distribution point leaves client certificates out,
// gives [ErrIncomplete] whether the extension is critical or not (RFC 5280
// sections 5.2.4 and 5.2.5). [CheckSignature] checks the signature alone.
// [CRL.IsRevoked] answers in O(log n) without allocating.
//
// # Judging
//
// [Freshness] is the one CRL-freshness rule (fresh, due soon, grace,
// expired, not yet valid) of `minica crl`, `minica crl status`, the proxy
// and its health endpoint. [Judge] is the one judge of a certificate:
// facts in (the certificate, the verdict on its chain, the trusted CAs,
// the CRL in use, the time, the grace, the issuer's revocation log), a
// verdict out. The proxy calls it in every handshake's VerifyConnection and
// again for open connections after a reload; `minica verify` calls it
// through [VerifyCertificate], which checks the chain to one issuing CA
// first. So both give the same verdict and the same reason for the same
// certificate, CA, CRL and time. Refusals are [*VerifyError] values whose
// [VerifyReason] is a stable label for logs and metrics; [ChainError] gives
// a refusal of crypto/x509's verifier the same labels.
package revoke

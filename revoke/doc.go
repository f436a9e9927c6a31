// Package revoke holds revocation records, builds X.509 v2 certificate
// revocation lists, and checks certificates against them.
//
// It is bytes in, bytes out: nothing here reads or writes the CA directory,
// so the same checker serves `minica verify`, the proxy, and a CRL fetched
// over HTTP.
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
// [CRL.IsRevoked] answers in O(log n) without allocating. [VerifyCertificate]
// judges a leaf the way the proxy does: CRL present and current, chain,
// validity, extended key usage, revocation. Its failures are [*VerifyError]
// values whose [VerifyReason] is a stable label for logs and metrics.
package revoke

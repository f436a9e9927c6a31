// Package etag holds the entity tag of serve's contract: the strong tag
// "sha256:<hex of SHA-256 of the DER>", which a client computes from the
// copy it holds. The CRL, the CA files and the OCSP answers carry it.
package etag

import (
	"crypto/sha256"
	"encoding/hex"
)

// Of returns the entity tag of der, quotes included.
func Of(der []byte) string {
	sum := sha256.Sum256(der)
	return `"sha256:` + hex.EncodeToString(sum[:]) + `"`
}

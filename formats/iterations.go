package formats

import (
	"errors"
	"fmt"
	"math"
	"math/big"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// MaxIterations is the highest key-derivation iteration count (PBKDF2 or the
// PKCS#12 KDF) that [DecodeP12] and [KeyData.Decrypt] accept. Tools write far
// fewer: OpenSSL 3 2,048 (pkcs12 -export and pkcs8 -topk8), Java keytool
// 10,000, NSS pk12util and go.step.sm/crypto's encrypted PKCS#8 600,000. At
// the limit a bundle's three derivations take a few seconds; a count of
// 2^31-1 would take most of an hour.
const MaxIterations = 10_000_000

// ErrTooManyIterations is matched by an [*IterationsError].
var ErrTooManyIterations = errors.New("iteration count above the limit")

// IterationsError reports a key derivation that asks for more than
// [MaxIterations] iterations. It is returned before any derivation runs.
type IterationsError struct {
	What  string // what the count protects, e.g. "the PKCS#12 MAC"
	Count int    // math.MaxInt when the count does not fit an int
}

// Error implements error.
func (e *IterationsError) Error() string {
	count := fmt.Sprint(e.Count)
	if e.Count == math.MaxInt {
		count = "more than " + fmt.Sprint(math.MaxInt64)
	}
	return fmt.Sprintf("%s asks for %s key-derivation iterations, above minica's limit of %d", e.What, count, MaxIterations)
}

// Is makes errors.Is(err, ErrTooManyIterations) true.
func (e *IterationsError) Is(target error) bool { return target == ErrTooManyIterations }

// pbeCount is one iteration count found in a structure, and what it protects.
type pbeCount struct {
	what  string
	count int
}

// checkCounts returns an *IterationsError for the first count above the limit.
func checkCounts(counts []pbeCount) error {
	for _, c := range counts {
		if c.count > MaxIterations {
			return &IterationsError{What: c.what, Count: c.count}
		}
	}
	return nil
}

// readCount reads an iteration count INTEGER of any size; one too large for
// an int reads as math.MaxInt, so that it is refused rather than skipped.
func readCount(s *cryptobyte.String, out *int) bool {
	n := new(big.Int)
	if !s.ReadASN1Integer(n) {
		return false
	}
	if n.IsInt64() && n.Int64() <= math.MaxInt {
		*out = int(n.Int64())
	} else if n.Sign() > 0 {
		*out = math.MaxInt
	} else {
		*out = math.MinInt
	}
	return true
}

// checkPKCS8Iterations refuses an EncryptedPrivateKeyInfo whose PBE asks for
// more than MaxIterations; anything it cannot read is left to the decrypter.
func checkPKCS8Iterations(der []byte) error {
	s := cryptobyte.String(der)
	var epki, alg cryptobyte.String
	if !s.ReadASN1(&epki, cbasn1.SEQUENCE) || !epki.ReadASN1(&alg, cbasn1.SEQUENCE) {
		return nil
	}
	_, _, n := describePBE(alg)
	return checkCounts([]pbeCount{{"the encrypted private key", n}})
}

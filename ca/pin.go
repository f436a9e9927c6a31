package ca

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"minica/formats"
)

// ErrCAPinMismatch is returned by CheckPinned for CA certificates that are
// not the one pinned by its fingerprint.
var ErrCAPinMismatch = errors.New("the CA certificate is not the one pinned")

// ParseFingerprint reads a SHA-256 fingerprint as `minica inspect` and
// `openssl x509 -fingerprint -sha256` print it, or as sha256sum prints the
// DER's: 64 hex digits in any case, with or without colons, optionally
// after "sha256:".
func ParseFingerprint(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if len(s) > 7 && strings.EqualFold(s[:7], "sha256:") {
		s = s[7:]
	}
	b, err := hex.DecodeString(strings.ReplaceAll(s, ":", ""))
	if err != nil || len(b) != sha256.Size {
		return nil, errors.New("want the SHA-256 fingerprint of the CA certificate: 64 hex digits, with or without colons")
	}
	return b, nil
}

// CheckPinned checks certs, CA certificates read from where they could
// have been changed (a download from `minica serve` over plain HTTP),
// against pin, the SHA-256 fingerprint of the CA the operator trusts: one
// of them must be that CA, and every other one issued under it through
// certs (an intermediate below a pinned root), so that nothing can be
// slipped in beside it. It returns an error wrapping ErrCAPinMismatch that
// names both fingerprints, as `minica inspect` prints them.
func CheckPinned(certs []*x509.Certificate, pin []byte) error {
	pinHex := colonHex(pin)
	in := make([]bool, len(certs)) // issued under the pinned CA, or it
	found := false
	for i, c := range certs {
		if sum := sha256.Sum256(c.Raw); bytes.Equal(sum[:], pin) {
			in[i], found = true, true
		}
	}
	if !found {
		if len(certs) == 0 {
			return fmt.Errorf("%w: no CA certificate; the pin is %s", ErrCAPinMismatch, pinHex)
		}
		seen := make([]string, len(certs))
		for i, c := range certs {
			seen[i] = fmt.Sprintf("%q has SHA-256 fingerprint %s", c.Subject.String(), fingerprint(c))
		}
		return fmt.Errorf("%w: %s; the pin is %s", ErrCAPinMismatch, strings.Join(seen, ", "), pinHex)
	}
	// Each pass admits the certificates signed by one admitted: at most
	// len(certs) passes.
	for grew := true; grew; {
		grew = false
		for i, c := range certs {
			for j, p := range certs {
				if !in[i] && in[j] && bytes.Equal(c.RawIssuer, p.RawSubject) && c.CheckSignatureFrom(p) == nil {
					in[i], grew = true, true
				}
			}
		}
	}
	for i, c := range certs {
		if !in[i] {
			return fmt.Errorf("%w: %q (SHA-256 fingerprint %s) is not issued under the pinned CA %s",
				ErrCAPinMismatch, c.Subject.String(), fingerprint(c), pinHex)
		}
	}
	return nil
}

// fingerprint is c's SHA-256 fingerprint as inspect prints it.
func fingerprint(c *x509.Certificate) string { return formats.FingerprintSHA256(c.Raw) }

// colonHex prints a fingerprint as formats.FingerprintSHA256 does.
func colonHex(b []byte) string {
	var sb strings.Builder
	for i, c := range b {
		if i > 0 {
			sb.WriteByte(':')
		}
		fmt.Fprintf(&sb, "%02X", c)
	}
	return sb.String()
}

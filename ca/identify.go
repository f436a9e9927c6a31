package ca

import (
	"errors"
	"strings"

	"minica/formats"
)

// Identify tells what a certificate, given by its serial and SHA-256
// fingerprint (hex in any case, with or without colons, as inspect prints
// them), is to this CA: its own certificate (isCA), or one it issued (rec,
// whose serial and fingerprint both match), or neither. err is the error
// of reading a record that exists but does not read.
func (c *CA) Identify(serial, sha256 string) (isCA bool, rec *Record, err error) {
	sum := normalHex(sha256)
	if sum == normalHex(formats.FingerprintSHA256(c.Cert.Raw)) {
		return true, nil, nil
	}
	n, err := ParseSerial(serial)
	if err != nil {
		return false, nil, nil
	}
	r, err := c.Record(n)
	if errors.Is(err, ErrNotFound) {
		return false, nil, nil
	}
	if err != nil {
		return false, nil, err
	}
	if r.Fingerprint != sum {
		return false, nil, nil
	}
	return false, r, nil
}

func normalHex(s string) string { return strings.ToLower(strings.ReplaceAll(s, ":", "")) }

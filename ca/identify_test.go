package ca

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"minica/formats"
	"minica/internal/testca"
)

func TestIdentify(t *testing.T) {
	c, signer := newTestCA(t, InitOptions{})
	is, err := c.Issue(signer, Request{Name: "alice", Profile: Client})
	if err != nil {
		t.Fatal(err)
	}
	rec := is.Record
	foreign, _ := testca.New(t, "Other").Client(t, "mallory")
	foreignSum := sha256.Sum256(foreign.Raw)
	tests := []struct {
		name, serial, sum string
		wantCA            bool
		wantSerial        string
	}{
		{name: "the CA itself, as inspect prints it", serial: "01", sum: formats.FingerprintSHA256(c.Cert.Raw), wantCA: true},
		{name: "an issued certificate", serial: rec.Serial, sum: rec.Fingerprint, wantSerial: rec.Serial},
		{name: "upper case with colons", serial: colonUpper(rec.Serial), sum: colonUpper(rec.Fingerprint), wantSerial: rec.Serial},
		{name: "same serial, other certificate", serial: rec.Serial, sum: hex.EncodeToString(foreignSum[:])},
		{name: "unknown serial", serial: SerialHex(foreign.SerialNumber), sum: hex.EncodeToString(foreignSum[:])},
		{name: "not a serial", serial: "zz", sum: strings.Repeat("0", 64)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isCA, r, err := c.Identify(tt.serial, tt.sum)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if r != nil {
				got = r.Serial
			}
			if isCA != tt.wantCA || got != tt.wantSerial {
				t.Errorf("Identify() = %v, %q; want %v, %q", isCA, got, tt.wantCA, tt.wantSerial)
			}
		})
	}
}

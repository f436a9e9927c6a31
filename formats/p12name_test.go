package formats_test

import (
	"testing"

	pkcs12 "software.sslmate.com/src/go-pkcs12"

	"minica/formats"
)

// The key of every bundle carries a friendlyName (the name given, else the
// leaf's CN) next to its localKeyId, and the MAC still verifies.
func TestP12FriendlyName(t *testing.T) {
	tests := []struct {
		name    string
		fx      p12Fixture
		profile formats.P12Profile
		give    string
		want    string
	}{
		{"modern named", serverFixture(t), formats.P12Modern, "web1", "web1"},
		{"compat named", rsaFixture(t), formats.P12Compat, "simon@laptop", "simon@laptop"},
		{"modern CN", rsaFixture(t), formats.P12Modern, "", rsaFixture(t).leaf.Subject.CommonName},
		{"compat non-ASCII", serverFixture(t), formats.P12Compat, "Zoë", "Zoë"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, iterations := range []int{0, 10} {
				enc := formats.P12Encoder{Profile: tt.profile, Iterations: iterations, Name: tt.give}
				data, err := enc.Encode(tt.fx.key, tt.fx.leaf, tt.fx.chain, "pw-123")
				if err != nil {
					t.Fatal(err)
				}
				if err := formats.CheckP12(data, "pw-123", tt.fx.key, tt.fx.leaf); err != nil {
					t.Fatalf("CheckP12() = %v", err)
				}
				// Only its headers are used: ToPEM is go-pkcs12's one
				// reader of bag attributes.
				//lint:ignore SA1019 the key encoding it gets wrong is not looked at
				blocks, err := pkcs12.ToPEM(data, "pw-123")
				if err != nil {
					t.Fatalf("pkcs12.ToPEM() = %v", err)
				}
				var keyName, keyID string
				for _, b := range blocks {
					if b.Type == "PRIVATE KEY" {
						keyName, keyID = b.Headers["friendlyName"], b.Headers["localKeyId"]
					}
				}
				if keyName != tt.want || keyID == "" {
					t.Errorf("key bag friendlyName %q, localKeyId %q; want %q and an id", keyName, keyID, tt.want)
				}
				if info, err := formats.P12EncryptionInfo(data); err != nil || (iterations == 0 && tt.profile == formats.P12Compat && info.MACIterations != 1) {
					t.Errorf("P12EncryptionInfo() = %+v, %v", info, err)
				}
			}
		})
	}
}

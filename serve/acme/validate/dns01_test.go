package validate

import (
	"context"
	"minica/serve/acme/internal/dnstest"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestDNS01(t *testing.T) {
	good := txtValue(keyAuth)
	dns := dnstest.Start(t, dnstest.Zone{TXT: map[string][]string{
		"_acme-challenge.good.test":  {"unrelated", good},
		"_acme-challenge.wild.test":  {good},
		"_acme-challenge.wrong.test": {txtValue("other")},
	}})
	tests := []struct {
		name    string
		id      Identifier
		wantErr string // "type: detail", "" when valid
	}{
		{"valid", Identifier{"dns", "good.test"}, ""},
		{"valid in upper case", Identifier{"dns", "GOOD.test"}, ""},
		{"wildcard", Identifier{"dns", "*.wild.test"}, ""},
		{"wrong value", Identifier{"dns", "wrong.test"},
			`incorrectResponse: TXT records of _acme-challenge.wrong.test. are ["` + txtValue("other") + `"]; want one "` + good + `"`},
		{"no such name", Identifier{"dns", "missing.test"},
			"dns: looking up TXT: _acme-challenge.missing.test.: no such name"},
		{"ip identifier", Identifier{"ip", "192.0.2.1"},
			`rejectedIdentifier: dns-01 validates dns identifiers only (RFC 8738 section 7), not ip "192.0.2.1"`},
		{"bad name", Identifier{"dns", "a b.test"},
			`rejectedIdentifier: dns identifier "a b.test": label "a b"`},
	}
	v := mustNew(t, Config{Resolver: dns.Addr, Total: time.Second})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := v.DNS01(context.Background(), tt.id, keyAuth)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("DNS01(%v) = %v; want %q", tt.id, err, tt.wantErr)
			}
		})
	}
}

// TestDNS01KnownValue checks the TXT value of a key authorization against
// one computed outside Go (base64url of SHA-256, padding stripped).
func TestDNS01KnownValue(t *testing.T) {
	const ka = "evaGxfADs6pSRb2LAv9IZf17Dt3juxGJ-PCt92wr-oA.nP1qzpXGymHBrUEepNY9HCsQk7K8KhOypzEt62jcerQ"
	if got, want := txtValue(ka), "NGwKoXBgCT8JhEa0bK7AwfSqHyu_ZWeugV07fLGIVq0"; got != want {
		t.Errorf("txtValue() = %q; want %q", got, want)
	}
}

// TestSilentResolver: a DNS server that never answers costs no more than
// Total, for dns-01 and for the name of http-01.
func TestSilentResolver(t *testing.T) {
	v := mustNew(t, Config{Resolver: dnstest.StartSilent(t), Total: 500 * time.Millisecond,
		Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	id := Identifier{"dns", "slow.test"}
	for name, validate := range map[string]func() error{
		"dns-01":  func() error { return v.DNS01(context.Background(), id, keyAuth) },
		"http-01": func() error { return v.HTTP01(context.Background(), id, token, keyAuth) },
	} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			err := validate()
			typ := map[string]string{"dns-01": TypeDNS, "http-01": TypeConnection}[name]
			wantError(t, err, typ, "no answer within the validation's time limit of 500ms")
			if d := time.Since(start); d > 1500*time.Millisecond {
				t.Errorf("took %v; want about 500ms", d)
			}
		})
	}
}

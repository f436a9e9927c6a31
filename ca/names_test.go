package ca

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// FuzzValidateName checks the hand-written matcher against the pattern it
// implements.
func FuzzValidateName(f *testing.F) {
	pattern := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	for _, s := range []string{"simon", "", ".x", "a.b", strings.Repeat("z", 64), strings.Repeat("z", 65), "é", "a\nb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if got, want := ValidateName(name) == nil, pattern.MatchString(name); got != want {
			t.Errorf("ValidateName(%q) accepts: %v; the pattern: %v", name, got, want)
		}
	})
}

func TestValidateName(t *testing.T) {
	tests := []struct {
		name    string
		wantErr bool
	}{
		{"simon", false},
		{"web1.example.com", false},
		{"a", false},
		{"A_b-c.9", false},
		{strings.Repeat("a", 64), false},
		{strings.Repeat("a", 65), true},
		{"", true},
		{"../x", true},
		{"a/b", true},
		{"..", true},
		{".x", true},
		{"-x", true},
		{"_x", true},
		{"x_", false},
		{"x-", false},
		{"a\x00b", true},
		{"a b", true},
		{"é", true},
		{"dave@example.com", true},
	}
	for _, tt := range tests {
		err := ValidateName(tt.name)
		if (err != nil) != tt.wantErr {
			t.Errorf("ValidateName(%q) = %v; want error %v", tt.name, err, tt.wantErr)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "invalid name ") {
			t.Errorf("ValidateName(%q) error = %q; want it to start with \"invalid name\"", tt.name, err)
		}
		if got, want := errors.Is(err, ErrNameAt), strings.Contains(tt.name, "@"); got != want {
			t.Errorf("ValidateName(%q) error = %v; errors.Is ErrNameAt: %v, want %v", tt.name, err, got, want)
		}
	}
}

func TestValidateText(t *testing.T) {
	tests := []struct {
		value   string
		wantErr string
	}{
		{"Simon Müller", ""},
		{"", "empty common name"},
		{"a\x01b", `invalid common name "a\x01b": control, bidi or other invisible characters are not allowed`},
		{"evil\u202egnp.exe", `invalid common name "evil\u202egnp.exe": control, bidi or other invisible characters are not allowed`},
		{"zero\u200bwidth", "invisible characters"},
		{"bad\xffutf8", "invisible characters"},
		{strings.Repeat("x", 65), "65 characters, at most 64 allowed"},
	}
	for _, tt := range tests {
		err := ValidateText("common name", tt.value)
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("ValidateText(%q) = %v; want nil", tt.value, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("ValidateText(%q) = %v; want containing %q", tt.value, err, tt.wantErr)
		}
	}
}

func TestValidateEmail(t *testing.T) {
	for _, ok := range []string{"simon@example.com", "a.b+c@sub.example.org"} {
		if err := ValidateEmail(ok); err != nil {
			t.Errorf("ValidateEmail(%q) = %v; want nil", ok, err)
		}
	}
	for _, bad := range []string{"", "simon", "simon@", "@example.com", "Simon <s@example.com>", "s@exa mple.com",
		"s\x01@example.com", "s\u202e@example.com", "sü@example.com", "s@-bad-.com"} {
		err := ValidateEmail(bad)
		if err == nil || !strings.HasPrefix(err.Error(), "invalid email ") {
			t.Errorf("ValidateEmail(%q) = %v; want an invalid email error", bad, err)
		}
	}
}

func TestValidateDNSAndURI(t *testing.T) {
	for _, ok := range []string{"example.com", "*.example.com", "web-1.internal", "localhost"} {
		if err := ValidateDNSName(ok); err != nil {
			t.Errorf("ValidateDNSName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "exa mple.com", "-a.com", "a..b", "a.com.", "under_score.com", strings.Repeat("a", 64) + ".com"} {
		if err := ValidateDNSName(bad); err == nil {
			t.Errorf("ValidateDNSName(%q) = nil; want error", bad)
		}
	}
	if _, err := ValidateURI("spiffe://example.org/svc"); err != nil {
		t.Errorf("ValidateURI: %v", err)
	}
	for _, bad := range []string{"relative/path", "http://exa mple", "urn"} {
		if _, err := ValidateURI(bad); err == nil {
			t.Errorf("ValidateURI(%q) = nil; want error", bad)
		}
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"90d", 90 * 24 * time.Hour},
		{"10y", 3650 * 24 * time.Hour},
		{"1.5d", 36 * time.Hour},
		{"36h", 36 * time.Hour},
		{"30m", 30 * time.Minute},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "0d", "-5d", "d", "5", "5w", "1e9y", "abc"} {
		_, err := ParseDuration(bad)
		if err == nil || !strings.HasPrefix(err.Error(), "invalid duration ") {
			t.Errorf("ParseDuration(%q) = %v; want invalid duration", bad, err)
		}
	}
	if got := FormatDuration(825 * 24 * time.Hour); got != "825d" {
		t.Errorf("FormatDuration = %q; want 825d", got)
	}
}

func TestParseSerial(t *testing.T) {
	for _, in := range []string{"5F3C", "5f:3c", "0x5f3c", "00:5F:3c"} {
		n, err := ParseSerial(in)
		if err != nil || n.Int64() != 0x5f3c {
			t.Errorf("ParseSerial(%q) = %v, %v; want 0x5f3c", in, n, err)
		}
	}
	for _, bad := range []string{"", "xyz", "0", "-5", "5g", strings.Repeat("f", 41)} {
		if _, err := ParseSerial(bad); err == nil {
			t.Errorf("ParseSerial(%q) = nil error", bad)
		}
	}
}

func TestKeyTypes(t *testing.T) {
	if kt, err := ParseKeyType("ECDSA-P384"); err != nil || kt != ECDSAP384 {
		t.Errorf("ParseKeyType is not case-insensitive: %v %v", kt, err)
	}
	_, err := ParseKeyType("dsa")
	if err == nil || !strings.Contains(err.Error(), `unknown key type "dsa": want one of ecdsa-p256`) {
		t.Errorf("ParseKeyType(dsa) = %v", err)
	}
}

func TestParseIP(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr string
	}{
		{in: "10.0.0.5", want: "10.0.0.5"},
		{in: "2001:db8::1", want: "2001:db8::1"},
		{in: "::ffff:10.0.0.5", want: "10.0.0.5"},
		{in: "", wantErr: `"": not an IP address`},
		{in: "not-an-ip", wantErr: `"not-an-ip": not an IP address`},
		{in: "10.0.0.0/8", wantErr: `"10.0.0.0/8": not an IP address`},
		{in: "fe80::1%eth0", wantErr: `"fe80::1%eth0": not an IP address`},
		{in: "10.0.0.5\n", wantErr: `"10.0.0.5\n": not an IP address`},
	}
	for _, tt := range tests {
		ip, err := ParseIP(tt.in)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("ParseIP(%q) error = %v; want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || ip.String() != tt.want {
			t.Errorf("ParseIP(%q) = %v, %v; want %s", tt.in, ip, err, tt.want)
		}
	}
}

func TestDNSNameReach(t *testing.T) {
	tests := []struct {
		name string
		want DNSReach
	}{
		{"web2.example.com", ReachDNS},
		{"localhost", ReachDNS},
		{"LocalHost", ReachDNS},
		{"app.localhost", ReachDNS},
		{"printer.local", ReachDNS},
		{"db.internal", ReachDNS},
		{"myapp.test", ReachDNS},
		{"web.example", ReachDNS},
		{"nas.home.arpa", ReachDNS},
		{"*.example.com", ReachDNS},
		{"web2", ReachSearchDomain},
		{"WEB2", ReachSearchDomain},
		{"*.web2", ReachSearchDomain},
		{"local", ReachSearchDomain},
		{"host.invalid", ReachNowhere},
		{"a.b.INVALID", ReachNowhere},
		{"invalid", ReachNowhere},
	}
	for _, tt := range tests {
		if got := DNSNameReach(tt.name); got != tt.want {
			t.Errorf("DNSNameReach(%q) = %v; want %v", tt.name, got, tt.want)
		}
	}
}

func TestUnresolvableNames(t *testing.T) {
	tests := []struct {
		sans []string
		want []string
	}{
		{[]string{"dns:web2"}, []string{"web2"}},
		{[]string{"dns:web2", "dns:db.invalid"}, []string{"web2", "db.invalid"}},
		{[]string{"dns:web2", "dns:web2.example.com"}, nil},
		{[]string{"dns:web2", "ip:10.0.0.5"}, nil},
		{[]string{"dns:localhost"}, nil},
		{[]string{"ip:10.0.0.7"}, nil},
		{[]string{"email:simon@example.com"}, nil},
		{[]string{"dns:svc", "uri:spiffe://acme/svc"}, []string{"svc"}},
		{nil, nil},
	}
	for _, tt := range tests {
		if got := UnresolvableNames(tt.sans); !slices.Equal(got, tt.want) {
			t.Errorf("UnresolvableNames(%q) = %q; want %q", tt.sans, got, tt.want)
		}
	}
}

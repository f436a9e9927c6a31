package validate

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestRefusal(t *testing.T) {
	tests := []struct {
		addr    string
		allow   string // a prefix for Config.Allow, or ""
		refused string // the refused range; "" when allowed
	}{
		{addr: "0.0.0.0", refused: "0.0.0.0/8"},
		{addr: "::", refused: "::/128"},
		{addr: "127.0.0.1", refused: "127.0.0.0/8"},
		{addr: "127.200.0.1", refused: "127.0.0.0/8"},
		{addr: "::1", refused: "::1/128"},
		{addr: "::ffff:127.0.0.1", refused: "127.0.0.0/8"},
		{addr: "169.254.169.254", refused: "169.254.0.0/16"},
		{addr: "::ffff:169.254.169.254", refused: "169.254.0.0/16"},
		{addr: "fe80::1", refused: "fe80::/10"},
		{addr: "fe80::1%eth0", refused: "fe80::/10"},
		{addr: "224.0.0.1", refused: "224.0.0.0/4"},
		{addr: "ff02::1", refused: "ff00::/8"},
		{addr: "240.0.0.1", refused: "240.0.0.0/4"},
		{addr: "255.255.255.255", refused: "240.0.0.0/4"},
		{addr: "10.1.2.3"},
		{addr: "172.16.0.1"},
		{addr: "192.168.1.1"},
		{addr: "fd00::1"},
		{addr: "192.0.2.1"},
		{addr: "2001:db8::1"},
		{addr: "127.0.0.1", allow: "127.0.0.1/32"},
		{addr: "::ffff:127.0.0.1", allow: "127.0.0.1/32"},
		{addr: "127.0.0.2", allow: "127.0.0.1/32", refused: "127.0.0.0/8"},
		{addr: "169.254.169.254", allow: "169.254.0.0/16"},
	}
	for _, tt := range tests {
		t.Run(tt.addr+" allow "+tt.allow, func(t *testing.T) {
			var cfg Config
			if tt.allow != "" {
				cfg.Allow = []netip.Prefix{netip.MustParsePrefix(tt.allow)}
			}
			v := mustNew(t, cfg)
			p, refused := v.refusal(netip.MustParseAddr(tt.addr))
			got := ""
			if refused {
				got = p.String()
			}
			if got != tt.refused {
				t.Errorf("refusal(%s) = %q; want %q", tt.addr, got, tt.refused)
			}
		})
	}
}

// TestDialRefusedBeforeConnect dials the metadata address: the dialer's
// check refuses it before any packet leaves, so it fails at once even
// where that address does not route.
func TestDialRefusedBeforeConnect(t *testing.T) {
	v := mustNew(t, Config{ConnectTimeout: time.Second})
	start := time.Now()
	_, err := v.dial(context.Background(), "tcp", "169.254.169.254:80")
	var refused *refusedError
	if !errors.As(err, &refused) {
		t.Fatalf("dial error = %v; want a refusedError", err)
	}
	if want := "169.254.169.254 is in the refused range 169.254.0.0/16"; !strings.Contains(err.Error(), want) {
		t.Errorf("dial error = %v; want containing %q", err, want)
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("refusal took %v; want no connection attempt", d)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"port", Config{HTTPPort: 70000}, "ports 70000 and 0: want 1 to 65535"},
		{"negative", Config{Total: -time.Second}, "negative timeout"},
		{"prefix", Config{Allow: []netip.Prefix{{}}}, "invalid prefix"},
		{"resolver", Config{Resolver: "127.0.0.1"}, `Resolver "127.0.0.1": want host:port`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("New() error = %v; want containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestNewDefaults(t *testing.T) {
	v := mustNew(t, Config{})
	want := Config{HTTPPort: 80, TLSPort: 443, ConnectTimeout: 5 * time.Second, TLSTimeout: 5 * time.Second,
		Total: 10 * time.Second, MaxRedirects: 10, MaxBody: 8192}
	if v.cfg.HTTPPort != want.HTTPPort || v.cfg.TLSPort != want.TLSPort || v.cfg.ConnectTimeout != want.ConnectTimeout ||
		v.cfg.TLSTimeout != want.TLSTimeout || v.cfg.Total != want.Total || v.cfg.MaxRedirects != want.MaxRedirects ||
		v.cfg.MaxBody != want.MaxBody {
		t.Errorf("defaults = %+v; want %+v", v.cfg, want)
	}
}

func TestTargetOf(t *testing.T) {
	tests := []struct {
		id       Identifier
		wantHost string
		wantErr  string
	}{
		{Identifier{"dns", "www.example.test"}, "www.example.test", ""},
		{Identifier{"ip", "192.0.2.1"}, "192.0.2.1", ""},
		{Identifier{"ip", "::ffff:192.0.2.1"}, "192.0.2.1", ""},
		{Identifier{"ip", "2001:db8::1"}, "2001:db8::1", ""},
		{Identifier{"dns", "*.example.test"}, "", "only dns-01 validates a wildcard"},
		{Identifier{"dns", "192.0.2.1"}, "", "is an IP address"},
		{Identifier{"dns", "a..b"}, "", `label ""`},
		{Identifier{"dns", "evil.test:81/x"}, "", `label "test:81/x"`},
		{Identifier{"ip", "fe80::1%eth0"}, "", "without zone"},
		{Identifier{"email", "a@b"}, "", `identifier type "email"`},
	}
	for _, tt := range tests {
		t.Run(tt.id.Value, func(t *testing.T) {
			got, err := targetOf(tt.id)
			if tt.wantErr != "" {
				wantError(t, err, TypeRejectedIdentifier, tt.wantErr)
				return
			}
			if err != nil || got.host != tt.wantHost {
				t.Errorf("targetOf(%v) = %q, %v; want %q", tt.id, got.host, err, tt.wantHost)
			}
		})
	}
}

func TestReverseName(t *testing.T) {
	tests := []struct{ addr, want string }{
		{"127.0.0.1", "1.0.0.127.in-addr.arpa"},
		// RFC 3596 section 2.5
		{"4321:0:1:2:3:4:567:89ab", "b.a.9.8.7.6.5.0.4.0.0.0.3.0.0.0.2.0.0.0.1.0.0.0.0.0.0.0.1.2.3.4.ip6.arpa"},
	}
	for _, tt := range tests {
		if got := reverseName(netip.MustParseAddr(tt.addr)); got != tt.want {
			t.Errorf("reverseName(%s) = %q; want %q", tt.addr, got, tt.want)
		}
	}
}

func mustNew(t *testing.T, cfg Config) *Validator {
	t.Helper()
	v, err := New(cfg)
	if err != nil {
		t.Fatalf("New(): %v", err)
	}
	return v
}

// wantError fails t unless err is an *Error of type typ whose Detail
// contains detail.
func wantError(t *testing.T, err error, typ, detail string) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v (%T); want an *Error of type %s", err, err, typ)
	}
	if e.Type != typ || !strings.Contains(e.Detail, detail) {
		t.Fatalf("error = %v; want type %s, detail containing %q", e, typ, detail)
	}
	return e
}

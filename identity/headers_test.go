package identity

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"minica/internal/testca"
	"minica/internal/testdn"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func readCert(t testing.TB, path string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("%s: no PEM block", path)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// goldenIdentity is a fixed client certificate (made with openssl) whose
// subject has a UTF-8 CN, an emailAddress, a comma, a plus sign and a
// multi-valued RDN: C=DE/O=Acme, Inc./OU=R+D+OU=Ops/CN=Zoë Müller/emailAddress.
func goldenIdentity(t testing.TB) *Identity {
	t.Helper()
	client := readCert(t, filepath.Join("testdata", "golden-client.pem"))
	ca := readCert(t, filepath.Join("testdata", "golden-ca.pem"))
	id, err := New(client, []*x509.Certificate{client, ca})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func renderText(hs []Header) string {
	var b strings.Builder
	for _, h := range hs {
		b.WriteString(h.Name + ": " + h.Value + "\n")
	}
	return b.String()
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run with -update to create it): %v", err)
	}
	if got != string(want) {
		t.Errorf("%s: got\n%s\nwant\n%s", name, got, want)
	}
}

func TestProfilesGolden(t *testing.T) {
	id := goldenIdentity(t)
	for _, p := range Profiles {
		t.Run(p, func(t *testing.T) {
			h, err := NewHeaders(p, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, "profile-"+p, renderText(h.Render(id)))
		})
	}
	t.Run("custom", func(t *testing.T) {
		var custom []string
		for _, f := range FieldNames() {
			custom = append(custom, "X-F-"+f+"="+f)
		}
		h, err := NewHeaders("rfc9440", custom)
		if err != nil {
			t.Fatal(err)
		}
		checkGolden(t, "custom", renderText(h.Render(id)))
	})
}

// TestGoldenFacts pins the values that come from outside minica, so that a
// wrong golden file cannot be accepted with -update unnoticed.
func TestGoldenFacts(t *testing.T) {
	id := goldenIdentity(t)
	want := map[string]string{
		"DN (openssl -nameopt RFC2253)": `emailAddress=zoe@example.com,CN=Zo\C3\AB M\C3\BCller,OU=R\+D+OU=Ops,O=Acme\, Inc.,C=DE`,
		"serial (openssl -serial)":      "C0FFEE1234567890ABCDEF12345678",
		"SHA-1 (openssl -fingerprint)":  "fe1d9319d19c70584d9679e287e37bec44b7870a",
	}
	got := map[string]string{
		"DN (openssl -nameopt RFC2253)": id.DN,
		"serial (openssl -serial)":      id.SerialHex,
		"SHA-1 (openssl -fingerprint)":  id.SHA1,
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s = %q; want %q", k, got[k], w)
		}
	}
	if got := opensslSubject(t, id.Cert); got != id.DN {
		t.Errorf("DN = %q; openssl prints %q", id.DN, got)
	}
}

func TestNewHeadersErrors(t *testing.T) {
	tests := []struct {
		name    string
		profile string
		custom  []string
		wantErr string
	}{
		{name: "unknown profile", profile: "haproxy", wantErr: `unknown header profile "haproxy" (known: minica, apache, nginx, xfcc, rfc9440, none)`},
		{name: "no equals", custom: []string{"X-User"}, wantErr: `custom header "X-User": want NAME=FIELD`},
		{name: "empty field", custom: []string{"X-User="}, wantErr: `custom header "X-User=": want NAME=FIELD`},
		{name: "bad name", custom: []string{"X User=cn"}, wantErr: `custom header "X User=cn": invalid header name "X User"`},
		{name: "hop by hop", custom: []string{"connection=cn"}, wantErr: `custom header "connection=cn": Connection is reserved for the HTTP layer`},
		{name: "unknown field", custom: []string{"X-User=name"}, wantErr: `custom header "X-User=name": unknown field "name" (known: ` + strings.Join(FieldNames(), ", ") + ")"},
		{name: "twice", custom: []string{"X-User=cn", "x-user=email"}, wantErr: `custom header "x-user=email": X-User given twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewHeaders(tt.profile, tt.custom)
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("NewHeaders() error = %v; want %q", err, tt.wantErr)
			}
		})
	}
	_, err := NewHeaders("nope", nil)
	if !errors.Is(err, ErrUnknownProfile) {
		t.Errorf("error %v is not ErrUnknownProfile", err)
	}
}

func TestNoneProfileSendsOnlyCustomHeaders(t *testing.T) {
	h, err := NewHeaders("none", []string{"X-User=email", "X-User-CN=cn"})
	if err != nil {
		t.Fatal(err)
	}
	got := renderText(h.Render(goldenIdentity(t)))
	want := "X-User: zoe.mueller@example.com\nX-User-Cn: Zo%C3%AB M%C3%BCller\n"
	if got != want {
		t.Errorf("profile none with two custom headers renders\n%s\nwant\n%s", got, want)
	}
}

func TestCustomReplacesProfileHeader(t *testing.T) {
	h, err := NewHeaders("MINICA", []string{"x-ssl-client-cn=email"})
	if err != nil {
		t.Fatal(err)
	}
	id := goldenIdentity(t)
	var got []string
	for _, hd := range h.Render(id) {
		if hd.Name == "X-Ssl-Client-Cn" {
			got = append(got, hd.Value)
		}
	}
	if len(got) != 1 || got[0] != "zoe.mueller@example.com" {
		t.Errorf("X-Ssl-Client-Cn = %q; want only the email", got)
	}
}

func TestEncodings(t *testing.T) {
	tests := []struct {
		name string
		fn   func(string) string
		in   string
		want string
	}{
		{"text ascii", escapeText, "alice smith", "alice smith"},
		{"text utf8", escapeText, "Zoë", "Zo%C3%AB"},
		{"text control", escapeText, "a\r\nb\x00\x7f", "a%0D%0Ab%00%7F"},
		{"text percent", escapeText, "100%", "100%25"},
		{"text edge spaces", escapeText, " a b ", "%20a b%20"},
		{"text invalid utf8", escapeText, "\xff", "%FF"},
		{"uri keeps percent", escapeURI, "https://x/a%20b c", "https://x/a%20b c"},
		{"item comma", escapeItem, "a,b", "a%2Cb"},
		{"modssl ascii", escapeModSSL, `100% a,b+c"d<e>;#`, `100% a,b+c"d<e>;#`},
		{"modssl backslash", escapeModSSL, `a\b`, `a\\b`},
		{"modssl control", escapeModSSL, "a\tb\nc\x7f", `a\09b\0Ac\7F`},
		{"modssl utf8", escapeModSSL, "Zoë", `Zo\C3\AB`},
		{"modssl edge spaces", escapeModSSL, " a b ", `\20a b\20`},
		{"modssl lone space", escapeModSSL, " ", `\20`},
		{"component", escapeComponent, "-----BEGIN X-----\nab+/=~_.\n", "-----BEGIN%20X-----%0Aab%2B%2F%3D~_.%0A"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.fn(tt.in); got != tt.want {
				t.Errorf("got %q; want %q", got, tt.want)
			}
		})
	}
}

// TestRenderIsWireSafe renders hostile subjects through every profile and
// checks that no control character or non-ASCII byte survives.
func TestRenderIsWireSafe(t *testing.T) {
	ca := testca.New(t, "Test CA")
	hostile := []string{"evil\r\nX-SSL-Client-CN: admin", "\x00\x01\x1f\x7f", "Zoë \xe2\x80\xae", " lead", "trail ", "tab\there"}
	var custom []string
	for _, f := range FieldNames() {
		custom = append(custom, "X-F-"+f+"="+f)
	}
	for _, cn := range hostile {
		cert, _ := ca.Leaf(t, &x509.Certificate{
			RawSubject:     testdn.Name(t, testdn.One(testdn.OU, testdn.UTF8(cn)), testdn.One(testdn.CN, testdn.UTF8(cn))),
			EmailAddresses: []string{"a\x01b@example.com"},
		})
		id, err := New(cert, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range Profiles {
			h, err := NewHeaders(p, custom)
			if err != nil {
				t.Fatal(err)
			}
			for _, hd := range h.Render(id) {
				for i := 0; i < len(hd.Value); i++ {
					if c := hd.Value[i]; c < 0x20 || c >= 0x7f {
						t.Fatalf("%s %s = %q: byte %#x", p, hd.Name, hd.Value, c)
					}
				}
				if !utf8.ValidString(hd.Value) || strings.TrimSpace(hd.Value) != hd.Value {
					t.Fatalf("%s %s = %q: not trimmed", p, hd.Name, hd.Value)
				}
			}
		}
	}
}

func TestXFCCValueQuoting(t *testing.T) {
	tests := []struct{ in, want string }{
		{"spiffe://example.com/a", "spiffe://example.com/a"},
		{"a,b", `"a,b"`},
		{"a;b=c", `"a;b=c"`},
		{`a"b\c`, `"a\"b\\c"`},
		{"a b", `"a b"`},
	}
	for _, tt := range tests {
		if got := xfccValue(tt.in); got != tt.want {
			t.Errorf("xfccValue(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
	if got, want := escapeList([]string{"a,b", "c%d", "é"}, escapeText), "a%2Cb,c%25d,%C3%A9"; got != want {
		t.Errorf("escapeList = %q; want %q", got, want)
	}
}

func TestProfileNames(t *testing.T) {
	for _, p := range Profiles {
		names, err := ProfileNames(p)
		if err != nil {
			t.Fatalf("ProfileNames(%q) error = %v", p, err)
		}
		h, err := NewHeaders(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		canon := h.Names()
		if len(names) != len(canon) {
			t.Fatalf("ProfileNames(%q) = %q; want the names of %q", p, names, canon)
		}
		for i := range names {
			if !strings.EqualFold(names[i], canon[i]) {
				t.Errorf("ProfileNames(%q)[%d] = %q; want %q", p, i, names[i], canon[i])
			}
		}
	}
	if _, err := ProfileNames("haproxy"); !errors.Is(err, ErrUnknownProfile) {
		t.Errorf("ProfileNames(haproxy) error = %v; want ErrUnknownProfile", err)
	}
}

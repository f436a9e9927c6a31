package ca

import (
	"errors"
	"strings"
	"testing"
)

func TestParseKeyURI(t *testing.T) {
	const mod = "?module-path=/usr/lib/softhsm/libsofthsm2.so"
	tests := []struct {
		name    string
		uri     string
		want    string // the canonical form
		wantErr string
	}{
		{name: "label", uri: "pkcs11:token=minica;object=ca2" + mod,
			want: "pkcs11:token=minica;object=ca2" + mod},
		{name: "scheme case, id percent-encoded, type", uri: "PKCS11:object=ca;token=my%20token;id=%01%AB;type=private" + mod,
			want: "pkcs11:token=my%20token;object=ca;id=%01%ab" + mod},
		{name: "plus is a plus", uri: "pkcs11:token=a+b;object=c" + mod, want: "pkcs11:token=a%2Bb;object=c" + mod},
		{name: "serial", uri: "pkcs11:serial=0123abcd;id=%01" + mod, want: "pkcs11:serial=0123abcd;id=%01" + mod},
		{name: "slot", uri: "pkcs11:slot-id=3;object=x" + mod, want: "pkcs11:slot-id=3;object=x" + mod},
		{name: "not pkcs11", uri: "file:/etc/ca.key", wantErr: "want a PKCS#11 URI (RFC 7512)"},
		{name: "pin-value", uri: "pkcs11:token=minica;object=ca" + mod + "&pin-value=1234", wantErr: "must not carry a PIN (pin-value)"},
		{name: "pin-source", uri: "pkcs11:token=minica;object=ca;pin-source=/tmp/pin" + mod, wantErr: "must not carry a PIN (pin-source)"},
		{name: "no module", uri: "pkcs11:token=minica;object=ca", wantErr: "no module-path"},
		{name: "relative module", uri: "pkcs11:token=minica;object=ca?module-path=libsofthsm2.so", wantErr: `module-path "libsofthsm2.so" is not an absolute path`},
		{name: "no token", uri: "pkcs11:object=ca" + mod, wantErr: "exactly one of token"},
		{name: "two tokens", uri: "pkcs11:token=a;serial=b;object=ca" + mod, wantErr: "exactly one of token"},
		{name: "no object", uri: "pkcs11:token=minica" + mod, wantErr: "name the key by object"},
		{name: "twice", uri: "pkcs11:token=a;token=b;object=c" + mod, wantErr: `attribute "token" is given twice`},
		{name: "unknown", uri: "pkcs11:token=a;object=c;library-version=1" + mod, wantErr: `unsupported attribute "library-version"`},
		{name: "public key", uri: "pkcs11:token=a;object=c;type=public" + mod, wantErr: "type=private"},
		{name: "bad slot", uri: "pkcs11:slot-id=x;object=c" + mod, wantErr: "want a decimal slot number"},
		{name: "bad escape", uri: "pkcs11:token=%zz;object=c" + mod, wantErr: "bad percent-encoding"},
		{name: "no equals", uri: "pkcs11:token;object=c" + mod, wantErr: "want name=value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := ParseKeyURI(tt.uri)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseKeyURI(%q) error = %v; want containing %q", tt.uri, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseKeyURI(%q): %v", tt.uri, err)
			}
			if got := u.String(); got != tt.want {
				t.Fatalf("String() = %q; want %q", got, tt.want)
			}
			again, err := ParseKeyURI(u.String())
			if err != nil || again.String() != tt.want {
				t.Fatalf("the canonical form does not parse back: %v, %v", again, err)
			}
		})
	}
	if _, err := ParseKeyURI("pkcs11:token=a;object=b" + mod + "&pin-value=1"); !errors.Is(err, ErrPINInURI) {
		t.Fatalf("pin-value error = %v; want ErrPINInURI", err)
	}
}

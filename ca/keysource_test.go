package ca

import (
	"errors"
	"path/filepath"
	"testing"

	"minica/formats"
)

func TestOpenSignerKeyFile(t *testing.T) {
	c, _ := newTestCA(t, InitOptions{})
	src, err := c.KeySource()
	if err != nil || src.Kind != KeyInFile || src.URI != nil {
		t.Fatalf("KeySource() = %+v, %v; want KeyInFile", src, err)
	}
	signer, err := c.OpenSigner(func(KeySource) ([]byte, error) {
		t.Error("OpenSigner asked for a secret of a key that needs none")
		return nil, nil
	})
	if err != nil || !publicKeysEqual(signer.Public(), c.Cert.PublicKey) {
		t.Fatalf("OpenSigner() = %v; want the CA key", err)
	}
}

func TestOpenSignerEncryptedFile(t *testing.T) {
	c, err := Init(filepath.Join(t.TempDir(), "ca"), InitOptions{CommonName: "Test Root", Password: []byte("right")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	src, err := c.KeySource()
	if err != nil || src.Kind != KeyInEncryptedFile {
		t.Fatalf("KeySource() = %+v, %v; want KeyInEncryptedFile", src, err)
	}
	errAsked := errors.New("no secret here")
	tests := []struct {
		name   string
		secret SecretFunc
		want   error // nil: the key opens
	}{
		{name: "nil", secret: nil, want: formats.ErrPasswordRequired},
		{name: "none given", secret: FixedSecret(nil), want: formats.ErrPasswordRequired},
		{name: "wrong", secret: FixedSecret([]byte("wrong")), want: formats.ErrWrongPassword},
		{name: "the finder's error", secret: func(KeySource) ([]byte, error) { return nil, errAsked }, want: errAsked},
		{name: "right", secret: FixedSecret([]byte("right"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			secret := tt.secret
			if secret != nil {
				secret = func(got KeySource) ([]byte, error) {
					calls++
					if got.Kind != KeyInEncryptedFile {
						t.Errorf("secret asked for %+v; want KeyInEncryptedFile", got)
					}
					return tt.secret(got)
				}
			}
			signer, err := c.OpenSigner(secret)
			if tt.want != nil {
				if !errors.Is(err, tt.want) {
					t.Fatalf("OpenSigner() error = %v; want %v", err, tt.want)
				}
			} else if err != nil || !publicKeysEqual(signer.Public(), c.Cert.PublicKey) {
				t.Fatalf("OpenSigner() = %v; want the CA key", err)
			}
			if tt.secret != nil && calls != 1 {
				t.Errorf("secret called %d times; want once", calls)
			}
		})
	}
}

func TestKeySourceSupported(t *testing.T) {
	u, err := ParseKeyURI("pkcs11:token=minica;object=ca?module-path=/usr/lib/softhsm/libsofthsm2.so")
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []KeySource{{Kind: KeyInFile}, {Kind: KeyInEncryptedFile}} {
		if err := src.Supported(); err != nil {
			t.Errorf("%+v.Supported() = %v; want nil", src, err)
		}
	}
	err = KeySource{Kind: KeyInToken, URI: u}.Supported()
	if PKCS11Supported != (err == nil) || (err != nil && !errors.Is(err, ErrPKCS11Unsupported)) {
		t.Errorf("Supported() of a token key = %v, with PKCS11Supported %v", err, PKCS11Supported)
	}
}

func TestInitOptionsKeySecret(t *testing.T) {
	o := InitOptions{Password: []byte("pw"), PIN: []byte("1234")}
	if got, _ := o.KeySecret(KeySource{Kind: KeyInToken}); string(got) != "1234" {
		t.Errorf("KeySecret(token) = %q; want the PIN", got)
	}
	if got, _ := o.KeySecret(KeySource{Kind: KeyInEncryptedFile}); string(got) != "pw" {
		t.Errorf("KeySecret(file) = %q; want the password", got)
	}
}

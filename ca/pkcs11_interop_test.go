//go:build interop && cgo && !nopkcs11

package ca

import (
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"minica/internal/keyscan"
	"minica/internal/softhsm"
	"minica/revoke"
)

// newToken makes a SoftHSM2 token for one test and points SOFTHSM2_CONF at
// it.
func newToken(t *testing.T) *softhsm.Token {
	t.Helper()
	tok, err := softhsm.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SOFTHSM2_CONF", tok.Conf)
	return tok
}

func mustURI(t *testing.T, s string) *KeyURI {
	t.Helper()
	u, err := ParseKeyURI(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// dirState is every file of a tree with its mode and SHA-256, to show that
// a failed command changed nothing.
func dirState(t *testing.T, root string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		line := p + " " + info.Mode().String()
		if info.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			line += " " + hex.EncodeToString(sum[:])
		}
		lines = append(lines, line)
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return "absent"
	}
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestTokenCA makes a CA whose key SoftHSM2 generates, issues, revokes and
// publishes a CRL with it, and then scans every file of the test (the CA
// directory and the token's own) for the CA's private key.
func TestTokenCA(t *testing.T) {
	tok := newToken(t)
	for _, kt := range []KeyType{ECDSAP256, RSA2048} {
		t.Run(string(kt), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ca")
			c, err := Init(dir, InitOptions{CommonName: "Token CA " + string(kt), KeyType: kt,
				KeyURI: mustURI(t, tok.URI("ca-"+string(kt))), PIN: []byte(softhsm.PIN), FirstCRL: true})
			if err != nil {
				t.Fatalf("Init: %v", err)
			}
			defer c.Close()
			if _, err := os.Stat(filepath.Join(dir, keyFile)); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("a token CA has %s: %v", keyFile, err)
			}
			stored, err := os.ReadFile(filepath.Join(dir, keyURIFile))
			if err != nil {
				t.Fatal(err)
			}
			u := mustURI(t, strings.TrimSpace(string(stored)))
			if u.Object != "ca-"+string(kt) || len(u.ID) != 16 || strings.Contains(string(stored), "pin") {
				t.Fatalf("stored key URI %q: want the object, a 16-byte id and no PIN", stored)
			}
			signer, err := c.LoadSigner([]byte(softhsm.PIN))
			if err != nil {
				t.Fatalf("LoadSigner: %v", err)
			}
			is, err := c.Issue(signer, Request{Name: "simon", Profile: Client, Emails: []string{"simon@example.com"}})
			if err != nil {
				t.Fatalf("Issue: %v", err)
			}
			if err := is.Cert.CheckSignatureFrom(c.Cert); err != nil {
				t.Fatalf("the leaf's signature: %v", err)
			}
			if _, err := c.Revoke(is.Cert.SerialNumber, revoke.KeyCompromise); err != nil {
				t.Fatalf("Revoke: %v", err)
			}
			info, err := c.PublishCRL(signer, 0)
			if err != nil {
				t.Fatalf("PublishCRL: %v", err)
			}
			crl, err := x509.ParseRevocationList(info.DER)
			if err != nil {
				t.Fatal(err)
			}
			if err := crl.CheckSignatureFrom(c.Cert); err != nil || len(crl.RevokedCertificateEntries) != 1 {
				t.Fatalf("CRL: signature %v, %d entries; want valid, 1", err, len(crl.RevokedCertificateEntries))
			}
			// Leaf keys minica generated sit in certs/NAME/SERIAL.key: the
			// scan allows those, and only those, and must find the CA's
			// key nowhere, not even in the token's (encrypted) files.
			allow := func(file string) bool {
				rel, _ := filepath.Rel(dir, file)
				return strings.HasPrefix(rel, "certs"+string(filepath.Separator)) && strings.HasSuffix(rel, ".key")
			}
			found, st, err := keyscan.Scan([]string{dir, tok.TokenDir, tok.Conf}, c.Cert.PublicKey, allow)
			if err != nil {
				t.Fatal(err)
			}
			if len(found) > 0 {
				t.Fatalf("private key material on disk: %v", found)
			}
			if st.Files < 10 || st.Windows == 0 {
				t.Fatalf("the scan looked at too little: %+v", st)
			}
			t.Logf("scanned %d files, %d bytes, %d PEM blocks, %d key-sized windows: no CA key", st.Files, st.Bytes, st.PEMBlocks, st.Windows)
		})
	}
}

// TestTokenKeyAttributes checks that the key Init makes is a sensitive,
// non-extractable signing key of the token.
func TestTokenKeyAttributes(t *testing.T) {
	tok := newToken(t)
	c, err := Init(filepath.Join(t.TempDir(), "ca"), InitOptions{CommonName: "Attr CA",
		KeyURI: mustURI(t, tok.URI("attr")), PIN: []byte(softhsm.PIN)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := openToken(c.keyURI, []byte(softhsm.PIN))
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	key, err := findOne(p, c.keyURI)
	if err != nil {
		t.Fatal(err)
	}
	info, err := key.info()
	if err != nil {
		t.Fatal(err)
	}
	if !info.Sensitive || info.Extractable || !info.CanSign || string(info.Label) != "attr" {
		t.Fatalf("key attributes %+v: want sensitive, not extractable, sign, label attr", info)
	}
}

// TestTokenErrors: each failure names what is wrong and changes nothing,
// in the CA directory or in the token.
func TestTokenErrors(t *testing.T) {
	tok := newToken(t)
	pin := []byte(softhsm.PIN)
	base := t.TempDir()
	caDir := filepath.Join(base, "ca")
	c, err := Init(caDir, InitOptions{CommonName: "Err CA", KeyURI: mustURI(t, tok.URI("ca")), PIN: pin})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	rewrite := func(t *testing.T, f func(u *KeyURI)) *CA {
		t.Helper()
		c, err := Open(caDir)
		if err != nil {
			t.Fatal(err)
		}
		u := *c.keyURI
		f(&u)
		c.keyURI = &u
		return c
	}
	loads := []struct {
		name    string
		change  func(u *KeyURI)
		pin     string
		is      error
		wantErr string
	}{
		{"wrong PIN", func(*KeyURI) {}, "9999", ErrWrongPIN, `logging in to PKCS#11 token "minica": wrong PIN`},
		{"no PIN", func(*KeyURI) {}, "", ErrPINRequired, `logging in to PKCS#11 token "minica": the PIN of the PKCS#11 token is required`},
		{"missing token", func(u *KeyURI) { u.Token = "gone" }, softhsm.PIN, ErrTokenNotFound,
			`opening PKCS#11 token "gone" in module "` + tok.Module + `": the module has no such token`},
		{"missing module", func(u *KeyURI) { u.ModulePath = "/nonexistent/libp11.so" }, softhsm.PIN, ErrModuleNotFound,
			`loading PKCS#11 module "/nonexistent/libp11.so" (module-path of the key URI): no such file`},
		{"not a module", func(u *KeyURI) { u.ModulePath = tok.Conf }, softhsm.PIN, ErrNotModule,
			`loading PKCS#11 module "` + tok.Conf + `" (module-path of the key URI): it is not a PKCS#11 library`},
		{"other key", func(u *KeyURI) { u.Object, u.ID = "other", nil }, softhsm.PIN, nil,
			`does not match the CA certificate`},
	}
	// A key of another label, for "other key".
	if oc, err := Init(filepath.Join(base, "other"), InitOptions{CommonName: "Other", KeyURI: mustURI(t, tok.URI("other")), PIN: pin}); err != nil {
		t.Fatal(err)
	} else {
		oc.Close()
	}
	for _, tt := range loads {
		t.Run(tt.name, func(t *testing.T) {
			before := dirState(t, base)
			c := rewrite(t, tt.change)
			defer c.Close()
			_, err := c.LoadSigner([]byte(tt.pin))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || (tt.is != nil && !errors.Is(err, tt.is)) {
				t.Fatalf("LoadSigner() error = %v; want containing %q (%v)", err, tt.wantErr, tt.is)
			}
			if after := dirState(t, base); after != before {
				t.Fatalf("the directory changed:\n%s\nwant\n%s", after, before)
			}
		})
	}

	inits := []struct {
		name    string
		o       InitOptions
		is      error
		wantErr string
	}{
		{"name taken", InitOptions{KeyURI: mustURI(t, tok.URI("ca")), PIN: pin}, ErrKeyExists,
			`PKCS#11 token "minica" already holds a key with object "ca"`},
		{"existing key missing", InitOptions{KeyURI: mustURI(t, tok.URI("nokey")), PIN: pin, ExistingKey: true}, ErrKeyNotFound,
			`looking up the key with object "nokey" in PKCS#11 token "minica": the token holds no such private key`},
		{"wrong PIN", InitOptions{KeyURI: mustURI(t, tok.URI("new")), PIN: []byte("0000")}, ErrWrongPIN, "wrong PIN"},
		{"ed25519", InitOptions{KeyURI: mustURI(t, tok.URI("ed")), PIN: pin, KeyType: Ed25519}, nil,
			"minica cannot create ed25519 keys in a PKCS#11 token"},
		{"id only", InitOptions{KeyURI: mustURI(t, "pkcs11:token=minica;id=%01?module-path="+tok.Module), PIN: pin}, nil,
			"a new key in a PKCS#11 token needs a label"},
	}
	for _, tt := range inits {
		t.Run("init "+tt.name, func(t *testing.T) {
			before := dirState(t, base)
			tt.o.CommonName = "New CA"
			_, err := Init(filepath.Join(base, "new"), tt.o)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || (tt.is != nil && !errors.Is(err, tt.is)) {
				t.Fatalf("Init() error = %v; want containing %q (%v)", err, tt.wantErr, tt.is)
			}
			if after := dirState(t, base); after != before {
				t.Fatalf("the directory changed:\n%s\nwant\n%s", after, before)
			}
		})
	}

	// Last: the key object removed from the token.
	t.Run("removed key", func(t *testing.T) {
		c, err := Open(caDir)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		p, err := openToken(c.keyURI, pin)
		if err != nil {
			t.Fatal(err)
		}
		key, err := findOne(p, c.keyURI)
		if err == nil {
			err = key.destroy()
		}
		p.close()
		if err != nil {
			t.Fatal(err)
		}
		before := dirState(t, base)
		_, err = c.LoadSigner(pin)
		if !errors.Is(err, ErrKeyNotFound) || !strings.Contains(err.Error(), `looking up the key with object "ca", id `) ||
			!strings.Contains(err.Error(), "it is the CA key of "+`"`+caDir+`"`) {
			t.Fatalf("LoadSigner() error = %v; want ErrKeyNotFound naming the object and the CA", err)
		}
		if after := dirState(t, base); after != before {
			t.Fatalf("the directory changed")
		}
	})
}

// TestTokenExistingKey makes a second CA of a key already in the token,
// with ExistingKey; the stored URI pins the key's label and id.
func TestTokenExistingKey(t *testing.T) {
	tok := newToken(t)
	pin := []byte(softhsm.PIN)
	first, err := Init(filepath.Join(t.TempDir(), "a"), InitOptions{CommonName: "First", KeyURI: mustURI(t, tok.URI("shared")), PIN: pin})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	second, err := Init(filepath.Join(t.TempDir(), "b"), InitOptions{CommonName: "Second", KeyURI: mustURI(t, tok.URI("shared")), PIN: pin, ExistingKey: true})
	if err != nil {
		t.Fatalf("Init with ExistingKey: %v", err)
	}
	defer second.Close()
	if got, want := second.keyURI.String(), first.keyURI.String(); got != want {
		t.Fatalf("stored URI %q; want %q", got, want)
	}
	if !publicKeysEqual(first.Cert.PublicKey, second.Cert.PublicKey) {
		t.Fatal("the second CA has another key")
	}
	if _, err := second.LoadSigner(pin); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkSignP256 signs a digest with the CA key of a SoftHSM2 token and
// with a file key, in one process: the cost of a signature without the
// start-up (module load, login) a command pays once.
//
//	go test -tags interop -run '^$' -bench SignP256 ./ca/
func BenchmarkSignP256(b *testing.B) {
	tok, err := softhsm.New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Setenv("SOFTHSM2_CONF", tok.Conf)
	u, err := ParseKeyURI(tok.URI("bench"))
	if err != nil {
		b.Fatal(err)
	}
	tc, err := Init(filepath.Join(b.TempDir(), "token"), InitOptions{CommonName: "Bench Token", KeyURI: u, PIN: []byte(softhsm.PIN)})
	if err != nil {
		b.Fatal(err)
	}
	defer tc.Close()
	tokenKey, err := tc.LoadSigner([]byte(softhsm.PIN))
	if err != nil {
		b.Fatal(err)
	}
	fileKey, err := ECDSAP256.Generate()
	if err != nil {
		b.Fatal(err)
	}
	digest := sha256.Sum256([]byte("minica"))
	for _, k := range []struct {
		name string
		key  crypto.Signer
	}{{"file", fileKey}, {"softhsm2", tokenKey}} {
		b.Run(k.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := k.key.Sign(rand.Reader, digest[:], crypto.SHA256); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

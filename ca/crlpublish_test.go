package ca

import (
	"bytes"
	"crypto"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minica/internal/certlint"
	"minica/revoke"
)

var errKilled = errors.New("killed")

// crlFiles returns the DER of crl.pem and of crl.der, failing the test when
// either does not hold a CRL of c.
func crlFiles(t *testing.T, c *CA) (pemDER, der []byte) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(c.Dir().Path(), CRLPEMFile))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("crl.pem holds no PEM block")
	}
	der, err = os.ReadFile(filepath.Join(c.Dir().Path(), CRLDERFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range [][]byte{block.Bytes, der} {
		if _, err := revoke.ParseCRL(d, c.Cert); err != nil {
			t.Fatal(err)
		}
	}
	return block.Bytes, der
}

// A publish killed after any of its writes leaves a state that every
// reader sees as either the old CRL with the revocation unpublished, or the
// new one; Check makes crl.pem and crl.der agree, and with the CA key
// publishes the revocation; a retried revoke republishes it too.
func TestPublishCRLKilled(t *testing.T) {
	for _, step := range []string{crlNumberFile, CRLPEMFile, CRLDERFile} {
		t.Run("after "+step, func(t *testing.T) {
			c, signer, is := caWithClient(t, "alice")
			serial := is.Cert.SerialNumber
			if _, err := c.Revoke(serial, revoke.KeyCompromise); err != nil {
				t.Fatal(err)
			}
			c.crashAfter = func(file string) error {
				if file == step {
					return errKilled
				}
				return nil
			}
			if _, err := c.PublishCRL(signer, 0); step != CRLDERFile && !errors.Is(err, errKilled) {
				t.Fatalf("PublishCRL() error = %v; want the injected kill", err)
			}
			c.crashAfter = nil

			// Whatever minica reads (crl.der) lacks the revocation, or lists it.
			crl, err := c.LoadCRL()
			if err != nil {
				t.Fatal(err)
			}
			unpublished, err := c.Unpublished(crl)
			if err != nil {
				t.Fatal(err)
			}
			wantUnpublished := step != CRLDERFile
			if got := len(unpublished) == 1 && unpublished[0] == SerialHex(serial); got != wantUnpublished || (!wantUnpublished && len(unpublished) != 0) {
				t.Errorf("Unpublished() = %v; want alice's serial listed: %v", unpublished, wantUnpublished)
			}
			res, err := c.Revoke(serial, revoke.KeyCompromise)
			if err != nil || !res.Already || res.Unpublished != wantUnpublished {
				t.Errorf("Revoke() again = %+v, %v; want Already, Unpublished %v", res, err, wantUnpublished)
			}

			// Check without the key makes the pair agree and reports the rest.
			rep, err := c.Check()
			if err != nil {
				t.Fatal(err)
			}
			if pemDER, der := crlFiles(t, c); !bytes.Equal(pemDER, der) {
				t.Errorf("after Check, crl.pem and crl.der differ")
			}
			wantProblem := "1 revocation not yet on the CRL (serial " + SerialHex(serial) + "): publish them with minica crl"
			if step == CRLPEMFile {
				// crl.pem held the new CRL: Check copied it to crl.der.
				if len(rep.Repaired) != 1 || !strings.HasPrefix(rep.Repaired[0], "rewrote crl.der from crl.pem (CRL ") || len(rep.Problems) != 0 {
					t.Errorf("Check() = %+v; want crl.der rewritten from crl.pem, no problem", rep)
				}
			} else if wantUnpublished && (len(rep.Problems) != 1 || rep.Problems[0] != wantProblem) {
				t.Errorf("Check() problems = %q; want [%q]", rep.Problems, wantProblem)
			}

			// With the key, Check publishes what was missing.
			rep, err = c.CheckWith(CheckOptions{Signer: func() (crypto.Signer, error) { return signer, nil }})
			if err != nil || len(rep.Problems) != 0 {
				t.Fatalf("CheckWith(signer) = %+v, %v; want no problem", rep, err)
			}
			pemDER, der := crlFiles(t, c)
			if !bytes.Equal(pemDER, der) {
				t.Errorf("after CheckWith(signer), crl.pem and crl.der differ")
			}
			got, err := revoke.ParseCRL(der, c.Cert)
			if err != nil {
				t.Fatal(err)
			}
			if e, ok := got.Lookup(serial); !ok || e.Reason != revoke.KeyCompromise {
				t.Errorf("after CheckWith(signer), the CRL lists alice: %v (%v); want keyCompromise", ok, e.Reason)
			}
			if res, _ := c.Revoke(serial, revoke.KeyCompromise); res.Unpublished {
				t.Errorf("Revoke() after the repair: Unpublished; want not")
			}
		})
	}
}

// Check rewrites a missing, unreadable or older one of crl.pem and crl.der
// from the other.
func TestCheckCRLPair(t *testing.T) {
	tests := []struct {
		name    string
		damage  func(t *testing.T, dir string, old []byte)
		want    string
		problem string
	}{
		{name: "crl.pem older", want: "rewrote crl.pem from crl.der",
			damage: func(t *testing.T, dir string, old []byte) {
				writeFile(t, filepath.Join(dir, CRLPEMFile), pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: old}))
			}},
		{name: "crl.der older", want: "rewrote crl.der from crl.pem",
			damage: func(t *testing.T, dir string, old []byte) { writeFile(t, filepath.Join(dir, CRLDERFile), old) }},
		{name: "crl.pem missing", want: "rewrote crl.pem from crl.der",
			damage: func(t *testing.T, dir string, old []byte) { os.Remove(filepath.Join(dir, CRLPEMFile)) }},
		{name: "crl.der missing", want: "rewrote crl.der from crl.pem",
			damage: func(t *testing.T, dir string, old []byte) { os.Remove(filepath.Join(dir, CRLDERFile)) }},
		{name: "crl.pem garbage", want: "rewrote crl.pem from crl.der",
			damage: func(t *testing.T, dir string, old []byte) {
				writeFile(t, filepath.Join(dir, CRLPEMFile), []byte("garbage"))
			}},
		{name: "both missing", problem: "no CRL published in ",
			damage: func(t *testing.T, dir string, old []byte) {
				os.Remove(filepath.Join(dir, CRLPEMFile))
				os.Remove(filepath.Join(dir, CRLDERFile))
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, signer, _ := caWithClient(t, "alice")
			_, old := crlFiles(t, c)
			info, err := c.PublishCRL(signer, 0)
			if err != nil {
				t.Fatal(err)
			}
			tt.damage(t, c.Dir().Path(), old)
			rep, err := c.Check()
			if err != nil {
				t.Fatal(err)
			}
			if tt.problem != "" {
				if len(rep.Problems) != 1 || !strings.HasPrefix(rep.Problems[0], tt.problem) {
					t.Errorf("Check() problems = %q; want one starting %q", rep.Problems, tt.problem)
				}
				return
			}
			if len(rep.Repaired) != 1 || !strings.HasPrefix(rep.Repaired[0], tt.want+" (CRL "+info.Number.String()+")") || len(rep.Problems) != 0 {
				t.Errorf("Check() = %+v; want %q of CRL %s", rep, tt.want, info.Number)
			}
			if pemDER, der := crlFiles(t, c); !bytes.Equal(pemDER, der) || !bytes.Equal(der, info.DER) {
				t.Errorf("after Check, the files do not both hold CRL %s", info.Number)
			}
			if info, err := os.Stat(filepath.Join(c.Dir().Path(), CRLPEMFile)); err != nil || info.Mode().Perm() != 0o644 {
				t.Errorf("crl.pem after Check: %v, %v; want mode 0644", info, err)
			}
			if again, _ := c.Check(); len(again.Repaired)+len(again.Problems) != 0 {
				t.Errorf("second Check() = %+v; want nothing to do", again)
			}
		})
	}
}

func writeFile(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// CRL numbers come from the signing time, and keep growing after an older
// copy of the directory is restored, and when the clock goes back.
func TestCRLNumberAfterRestore(t *testing.T) {
	start := time.Date(2030, 1, 2, 3, 4, 5, 600, time.UTC)
	c, signer := newTestCA(t, InitOptions{Now: fixedClock(start)})
	c.Now = fixedClock(start)
	first, err := c.PublishCRL(signer, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := big.NewInt(start.UnixMilli()); first.Number.Cmp(want) != 0 {
		t.Errorf("first CRL number = %v; want %v, the signing time in milliseconds", first.Number, want)
	}
	backup := filepath.Join(t.TempDir(), "backup")
	if err := copyTree(c.Dir().Path(), backup); err != nil {
		t.Fatal(err)
	}
	// Many CRLs in the same millisecond, then later ones.
	var last *CRLInfo
	for i, at := range []time.Time{start, start, start, start.Add(time.Hour), start.Add(time.Hour)} {
		c.Now = fixedClock(at)
		info, err := c.PublishCRL(signer, 0)
		if err != nil {
			t.Fatal(err)
		}
		prev := first
		if last != nil {
			prev = last
		}
		if info.Number.Cmp(prev.Number) <= 0 {
			t.Fatalf("CRL %d: number %v not above %v", i, info.Number, prev.Number)
		}
		last = info
	}

	restored, err := Open(backup)
	if err != nil {
		t.Fatal(err)
	}
	defer restored.Close()
	for _, tt := range []struct {
		name string
		at   time.Time
	}{
		{"restored a day later", start.Add(24 * time.Hour)},
		{"clock back a year", start.Add(-365 * 24 * time.Hour)},
	} {
		restored.Now = fixedClock(tt.at)
		info, err := restored.PublishCRL(signer, 0)
		if err != nil {
			t.Fatal(err)
		}
		if info.Number.Cmp(last.Number) <= 0 {
			t.Errorf("%s: number %v not above %v", tt.name, info.Number, last.Number)
		}
		if len(info.Number.Bytes()) > 20 {
			t.Errorf("%s: number %v longer than 20 octets", tt.name, info.Number)
		}
		certlint.RevocationList(t, info.DER)
		last = info
	}
}

// copyTree copies the directory src to dst, keeping file modes, as tar does.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, info.Mode().Perm())
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, info.Mode().Perm())
	})
}

// BenchmarkUnpublished measures what `crl status` and `check` add: reading
// the revocation log and looking every revocation up in the CRL.
func BenchmarkUnpublished(b *testing.B) {
	for _, n := range []int{1_000, 1_000_000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			c, signer := newTestCA(b, InitOptions{})
			writeRevocationLog(b, c, n)
			if _, err := c.PublishCRL(signer, 0); err != nil {
				b.Fatal(err)
			}
			crl, err := c.LoadCRL()
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				if missing, err := c.Unpublished(crl); err != nil || len(missing) != 0 {
					b.Fatalf("Unpublished() = %d serials, %v; want none", len(missing), err)
				}
			}
		})
	}
}

// The number of the next CRL is above the published CRL's when the number
// file was restored older than crl.der: read without verifying when it is
// not above the file's number, and verified when it is, so that a CRL of
// another CA planted with a higher number stops the publication.
func TestCRLNumberAboveRestoredNumberFile(t *testing.T) {
	c, signer := newTestCA(t, InitOptions{})
	first, err := c.PublishCRL(signer, 0)
	if err != nil {
		t.Fatal(err)
	}
	older := new(big.Int).Sub(first.Number, big.NewInt(1_000_000))
	writeFile(t, filepath.Join(c.Dir().Path(), crlNumberFile), []byte(older.String()+"\n"))
	c.Now = fixedClock(time.UnixMilli(older.Int64())) // the clock would not raise it either
	next, err := c.PublishCRL(signer, 0)
	if err != nil {
		t.Fatal(err)
	}
	if next.Number.Cmp(first.Number) <= 0 {
		t.Fatalf("CRL number %s after a restored number file; want above the published %s", next.Number, first.Number)
	}

	other, otherSigner := newTestCA(t, InitOptions{CommonName: "Other Root"})
	other.Now = fixedClock(time.UnixMilli(next.Number.Int64() + 10_000))
	foreign, err := other.PublishCRL(otherSigner, 0)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(c.Dir().Path(), CRLDERFile), foreign.DER)
	if _, err := c.PublishCRL(signer, 0); err == nil || !errors.Is(err, revoke.ErrWrongIssuer) {
		t.Errorf("PublishCRL over another CA's crl.der numbered higher = %v; want an error wrapping ErrWrongIssuer", err)
	}
}

package ca

import (
	"bytes"
	"crypto"
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"minica/ca/store"
	"minica/revoke"
)

// TestCheckFinishesInterruptedIssuance builds the states a crash during
// issuance can leave (the files are written in place, so a crash can
// truncate one, and a power loss can keep any of them) and checks that
// Check completes the record when a whole certificate and its key reached
// the disk and voids it, removing the files, otherwise.
func TestCheckFinishesInterruptedIssuance(t *testing.T) {
	tests := []struct {
		name       string
		damage     func(c *CA, r *Record)
		wantRepair string
		wantStatus Status
		wantGone   []func(r *Record) string
	}{
		{"certificate not yet written", func(c *CA, r *Record) { os.Remove(c.Path(r.CertPath())) },
			"completed the interrupted issuance", StatusValid, nil},
		{"certificate truncated", func(c *CA, r *Record) { truncate(t, c.Path(r.CertPath())) },
			"completed the interrupted issuance", StatusValid, nil},
		{"chain truncated", func(c *CA, r *Record) { truncate(t, c.Path(r.ChainPath())) },
			"completed the interrupted issuance", StatusValid, nil},
		{"chain truncated, no certificate", func(c *CA, r *Record) {
			truncate(t, c.Path(r.ChainPath()))
			os.Remove(c.Path(r.CertPath()))
		}, "voided serial", StatusVoid, []func(r *Record) string{(*Record).KeyPath, (*Record).ChainPath}},
		{"key truncated, nothing else", func(c *CA, r *Record) {
			truncate(t, c.Path(r.KeyPath()))
			os.Remove(c.Path(r.ChainPath()))
			os.Remove(c.Path(r.CertPath()))
		}, "voided serial", StatusVoid, []func(r *Record) string{(*Record).KeyPath}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, is := interruptedIssuance(t, tt.damage)
			rec := is.Record
			rep, err := c.Check()
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Problems) > 0 || len(rep.Repaired) != 1 || !strings.Contains(rep.Repaired[0], tt.wantRepair) {
				t.Fatalf("Check() repaired %q, problems %q; want one repair containing %q", rep.Repaired, rep.Problems, tt.wantRepair)
			}
			got, err := c.Record(is.Cert.SerialNumber)
			if err != nil || got.Status != tt.wantStatus {
				t.Fatalf("record status = %v (%v); want %s", got.Status, err, tt.wantStatus)
			}
			if tt.wantStatus == StatusValid {
				cert, err := c.readCert(rec.CertPath())
				if err != nil || !cert.Equal(is.Cert) {
					t.Errorf("certificate file after check: %v", err)
				}
				chain, err := c.firstCert(rec.ChainPath())
				if err != nil || !chain.Equal(is.Cert) {
					t.Errorf("chain file after check: %v", err)
				}
			}
			for _, p := range tt.wantGone {
				if _, err := os.Stat(c.Path(p(rec))); !os.IsNotExist(err) {
					t.Errorf("%s still exists after voiding", p(rec))
				}
			}
			if again, _ := c.Check(); len(again.Repaired)+len(again.Problems) != 0 {
				t.Errorf("second Check() = %+v; want nothing to do", again)
			}
		})
	}
}

// caWithClient returns a new CA that has published a CRL (so that Check has
// nothing else to say) and issued a client certificate to name.
func caWithClient(t *testing.T, name string) (*CA, crypto.Signer, *Issued) {
	t.Helper()
	c, signer := newTestCA(t, InitOptions{})
	if _, err := c.PublishCRL(signer, 0); err != nil {
		t.Fatal(err)
	}
	is, err := c.Issue(signer, Request{Name: name, Profile: Client})
	if err != nil {
		t.Fatal(err)
	}
	return c, signer, is
}

// interruptedIssuance issues a certificate with caWithClient, applies damage
// to its files and marks its record pending again, as a crash during
// issuance leaves it.
func interruptedIssuance(t *testing.T, damage func(c *CA, r *Record)) (*CA, *Issued) {
	t.Helper()
	c, _, is := caWithClient(t, "simon")
	damage(c, is.Record)
	pending := *is.Record
	pending.Status = StatusPending
	if err := c.putRecord(&pending); err != nil {
		t.Fatal(err)
	}
	return c, is
}

// A power loss can keep a certificate and lose its key (they are synced
// together): Check records the certificate without a key, so that it stays
// revocable, and reports it.
func TestCheckRecordsCertificateWithLostKey(t *testing.T) {
	for _, damage := range []string{"missing", "truncated"} {
		t.Run(damage, func(t *testing.T) {
			c, is := interruptedIssuance(t, func(c *CA, r *Record) {
				if damage == "missing" {
					os.Remove(c.Path(r.KeyPath()))
				} else {
					truncate(t, c.Path(r.KeyPath()))
				}
			})
			rec := is.Record
			rep, err := c.Check()
			if err != nil {
				t.Fatal(err)
			}
			// The one repair: current.key, which would name the lost key, goes.
			if len(rep.Repaired) != 1 || !strings.Contains(rep.Repaired[0], "current.* links of simon") || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "its key did not reach the disk: revoke it (minica revoke "+rec.Serial+")") {
				t.Fatalf("Check() repaired %q, problems %q; want one problem naming the lost key", rep.Repaired, rep.Problems)
			}
			if _, err := os.Lstat(c.Path(CurrentKeyPath("simon"))); !os.IsNotExist(err) {
				t.Errorf("current.key after check: %v; want it gone with the key", err)
			}
			got, err := c.Record(is.Cert.SerialNumber)
			if err != nil || got.Status != StatusValid || got.HasKey {
				t.Fatalf("record after check: %+v (%v); want valid, without key", got, err)
			}
			if _, err := os.Stat(c.Path(rec.KeyPath())); !os.IsNotExist(err) {
				t.Errorf("the %s key file after check: %v; want it gone", damage, err)
			}
			if cert, err := c.readCert(rec.CertPath()); err != nil || !cert.Equal(is.Cert) {
				t.Errorf("certificate file after check: %v; want it kept", err)
			}
			if again, _ := c.Check(); len(again.Repaired)+len(again.Problems) != 0 {
				t.Errorf("second Check() = %+v; want nothing to do", again)
			}
		})
	}
}

// TestCheckRebuildsUnreadableRevokedRecord: records are synced lazily, so a
// power loss can leave one unreadable; check rebuilds it from the
// certificate, and the revocation log (synced first) restores its
// revocation.
func TestCheckRebuildsUnreadableRevokedRecord(t *testing.T) {
	c, signer, is := caWithClient(t, "lost")
	if _, err := c.Revoke(is.Cert.SerialNumber, revoke.KeyCompromise); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PublishCRL(signer, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.Path(recordPath(is.Record.Serial)), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := c.Check()
	if err != nil || len(rep.Problems) > 0 {
		t.Fatalf("Check() = %+v, %v", rep, err)
	}
	got, err := c.Record(is.Cert.SerialNumber)
	if err != nil || got.Status != StatusRevoked || got.Reason != "keyCompromise" || !got.HasKey {
		t.Fatalf("rebuilt record = %+v, %v; want revoked keyCompromise with its key", got, err)
	}
}

// TestCheckKeepsACMEFiles checks that check leaves the ACME objects and
// nonces (db/acme) alone, reporting nothing, and removes the temporary
// files that interrupted writes of them left.
func TestCheckKeepsACMEFiles(t *testing.T) {
	c, signer := newTestCA(t, InitOptions{})
	if _, err := c.PublishCRL(signer, 0); err != nil {
		t.Fatal(err)
	}
	acct := store.Object{Kind: "accounts", ID: "acct1", Data: []byte(`{"status":"valid"}`)}
	if err := c.db.CreateObject(acct); err != nil {
		t.Fatal(err)
	}
	const nonce = "Y2hlY2tlZC1ub25jZS0xMjM0"
	if err := c.db.AddNonce(nonce, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	temps := []string{"db/acme/accounts/.tmp-1", "db/acme/.tmp-3"}
	for _, name := range temps {
		if err := os.WriteFile(c.Path(name), []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := c.Check()
	if err != nil || len(rep.Problems) > 0 || len(rep.Repaired) > 0 {
		t.Fatalf("Check() = repaired %q, problems %q, %v; want nothing to say", rep.Repaired, rep.Problems, err)
	}
	for _, name := range temps {
		if _, err := os.Stat(c.Path(name)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s after Check(): %v; want removed", name, err)
		}
	}
	if got, err := c.db.Object(acct.Kind, acct.ID); err != nil || !bytes.Equal(got.Data, acct.Data) {
		t.Errorf("Object(%s, %s) after Check() = %q, %v; want %q", acct.Kind, acct.ID, got.Data, err, acct.Data)
	}
	if ok, err := c.db.UseNonce(nonce, time.Now()); !ok || err != nil {
		t.Errorf("UseNonce() after Check() = %v, %v; want true", ok, err)
	}
}

package ca

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minica/revoke"
)

// colonUpper writes a record serial the way openssl prints it: upper case,
// a colon between octets.
func colonUpper(serial string) string {
	var parts []string
	for i := 0; i < len(serial); i += 2 {
		parts = append(parts, strings.ToUpper(serial[i:i+2]))
	}
	return strings.Join(parts, ":")
}

func writeForeignCert(t *testing.T, dir string) string {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(0x7777), Subject: pkix.Name{CommonName: "Foreign"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "foreign.pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

func TestResolve(t *testing.T) {
	start := time.Now().UTC().Truncate(time.Second)
	c, signer := newTestCA(t, InitOptions{})
	c.Now = fixedClock(start)
	issue := func(req Request) *Issued {
		t.Helper()
		is, err := c.Issue(signer, req)
		if err != nil {
			t.Fatalf("Issue %s: %v", req.Name, err)
		}
		return is
	}
	alice1 := issue(Request{Name: "alice", Profile: Client})
	c.Now = fixedClock(start.Add(time.Hour))
	alice2 := issue(Request{Name: "alice", Profile: Client, Force: true})
	bob := issue(Request{Name: "bob", Profile: Client})
	foreign := writeForeignCert(t, t.TempDir())
	unknown := strings.Repeat("ab", 16)

	tests := []struct {
		name     string
		arg      string
		kind     TargetKind
		want     []string // serials, oldest first
		wantErr  string
		notFound bool
	}{
		{name: "name", arg: "alice", kind: TargetName, want: []string{alice1.Record.Serial, alice2.Record.Serial}},
		{name: "serial", arg: bob.Record.Serial, kind: TargetSerial, want: []string{bob.Record.Serial}},
		{name: "serial upper case with colons", arg: colonUpper(bob.Record.Serial), kind: TargetSerial, want: []string{bob.Record.Serial}},
		{name: "serial with 0x", arg: "0x" + bob.Record.Serial, kind: TargetSerial, want: []string{bob.Record.Serial}},
		{name: "issued file", arg: bob.CertFile, kind: TargetFile, want: []string{bob.Record.Serial}},
		{name: "chain file", arg: bob.ChainFile, kind: TargetFile, want: []string{bob.Record.Serial}},
		{name: "foreign file", arg: foreign, notFound: true,
			wantErr: foreign + " (serial 00000000000000000000000000007777) was not issued by this CA"},
		{name: "unknown serial", arg: unknown, notFound: true, wantErr: "serial " + unknown + ": no such certificate"},
		{name: "unknown name", arg: "nobody", notFound: true,
			wantErr: `no certificate named "nobody", and it is not a serial number or a certificate file`},
		{name: "invalid name", arg: "../x", notFound: true,
			wantErr: `no certificate named "../x", and it is not a serial number or a certificate file`},
		{name: "unreadable file", arg: t.TempDir(), notFound: true,
			wantErr: `no certificate named`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := c.Resolve(tt.arg)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("Resolve(%q) error = %v; want %q", tt.arg, err, tt.wantErr)
				}
				if tt.notFound != errors.Is(err, ErrNotFound) {
					t.Errorf("errors.Is(%v, ErrNotFound) = %v; want %v", err, !tt.notFound, tt.notFound)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve(%q): %v", tt.arg, err)
			}
			if got.Kind != tt.kind {
				t.Errorf("Kind = %v; want %v", got.Kind, tt.kind)
			}
			var serials []string
			for _, r := range got.Records {
				serials = append(serials, r.Serial)
			}
			if strings.Join(serials, " ") != strings.Join(tt.want, " ") {
				t.Errorf("records %v; want %v", serials, tt.want)
			}
			if (got.Cert != nil) != (tt.kind == TargetFile) {
				t.Errorf("Cert = %v; want one only for a file", got.Cert)
			}
		})
	}

	t.Run("foreign file keeps its certificate", func(t *testing.T) {
		got, err := c.Resolve(foreign)
		if got == nil || got.Cert == nil || got.Cert.SerialNumber.Int64() != 0x7777 {
			t.Fatalf("Resolve(foreign) = %v, %v; want the file's certificate with the error", got, err)
		}
		cert, err := c.ResolveCertificate(foreign)
		if err != nil || cert.SerialNumber.Int64() != 0x7777 {
			t.Errorf("ResolveCertificate(foreign) = %v, %v; want the file's certificate", cert, err)
		}
	})
	t.Run("ResolveCertificate of a name is its newest", func(t *testing.T) {
		cert, err := c.ResolveCertificate("alice")
		if err != nil {
			t.Fatal(err)
		}
		if got := SerialHex(cert.SerialNumber); got != alice2.Record.Serial {
			t.Errorf("serial %s; want %s", got, alice2.Record.Serial)
		}
	})
}

func TestTargetRevocable(t *testing.T) {
	start := time.Now().UTC().Truncate(time.Second)
	c, signer := newTestCA(t, InitOptions{})
	c.Now = fixedClock(start)
	issue := func(req Request) *Record {
		t.Helper()
		is, err := c.Issue(signer, req)
		if err != nil {
			t.Fatalf("Issue %s: %v", req.Name, err)
		}
		return is.Record
	}
	a1 := issue(Request{Name: "alice", Profile: Client})
	c.Now = fixedClock(start.Add(time.Minute))
	a2 := issue(Request{Name: "alice", Profile: Client, Force: true})
	g1 := issue(Request{Name: "gone", Profile: Client})
	if _, err := c.RevokeRecord(g1, revoke.KeyCompromise); err != nil {
		t.Fatal(err)
	}
	h1 := issue(Request{Name: "half", Profile: Client})
	c.Now = fixedClock(start.Add(2 * time.Minute))
	h2 := issue(Request{Name: "half", Profile: Client, Force: true})
	if _, err := c.RevokeRecord(h1, revoke.Superseded); err != nil {
		t.Fatal(err)
	}
	day := func(r *Record) string { return r.IssuedAt.UTC().Format(time.RFC3339) }

	tests := []struct {
		arg     string
		all     bool
		want    []string
		wantErr string
	}{
		{arg: "alice", wantErr: `"alice" has 2 unrevoked certificates: ` + a1.Serial + " (issued " + day(a1) + "), " + a2.Serial + " (issued " + day(a2) + ")"},
		{arg: "alice", all: true, want: []string{a1.Serial, a2.Serial}},
		{arg: a1.Serial, want: []string{a1.Serial}},
		{arg: "gone", want: []string{g1.Serial}},
		{arg: "half", want: []string{h2.Serial}},
	}
	for _, tt := range tests {
		t.Run(tt.arg, func(t *testing.T) {
			target, err := c.Resolve(tt.arg)
			if err != nil {
				t.Fatal(err)
			}
			recs, err := target.Revocable(tt.all)
			if tt.wantErr != "" {
				var amb *AmbiguousError
				if err == nil || err.Error() != tt.wantErr || !errors.As(err, &amb) || !errors.Is(err, ErrAmbiguous) {
					t.Fatalf("Revocable() error = %v; want an *AmbiguousError %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var serials []string
			for _, r := range recs {
				serials = append(serials, r.Serial)
			}
			if strings.Join(serials, " ") != strings.Join(tt.want, " ") {
				t.Errorf("Revocable() = %v; want %v", serials, tt.want)
			}
		})
	}
}

// TestTargetLiftable: removeFromCRL on a name means its certificates on
// hold, whatever else the name has.
func TestTargetLiftable(t *testing.T) {
	start := time.Now().UTC().Truncate(time.Second)
	c, signer := newTestCA(t, InitOptions{})
	c.Now = fixedClock(start)
	issue := func(name string) *Record {
		t.Helper()
		is, err := c.Issue(signer, Request{Name: name, Profile: Client, Force: true})
		if err != nil {
			t.Fatalf("Issue %s: %v", name, err)
		}
		return is.Record
	}
	hold := func(r *Record) {
		t.Helper()
		if _, err := c.RevokeRecord(r, revoke.CertificateHold); err != nil {
			t.Fatal(err)
		}
	}
	a1 := issue("alice") // on hold, then re-issued
	hold(a1)
	c.Now = fixedClock(start.Add(time.Minute))
	a2 := issue("alice")
	b1 := issue("bob") // both on hold
	c.Now = fixedClock(start.Add(2 * time.Minute))
	b2 := issue("bob")
	hold(b1)
	hold(b2)
	n1 := issue("nohold")
	tests := []struct {
		arg     string
		all     bool
		want    []string
		wantErr string
	}{
		{arg: "alice", want: []string{a1.Serial}},
		{arg: a2.Serial, want: []string{a2.Serial}},
		{arg: "bob", wantErr: `"bob" has 2 certificates on hold: ` + b1.Serial},
		{arg: "bob", all: true, want: []string{b1.Serial, b2.Serial}},
		{arg: "nohold", want: []string{n1.Serial}}, // what Revocable gives; RevokeRecord refuses it
	}
	for _, tt := range tests {
		t.Run(tt.arg, func(t *testing.T) {
			target, err := c.Resolve(tt.arg)
			if err != nil {
				t.Fatal(err)
			}
			recs, err := target.Liftable(tt.all)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) || !errors.Is(err, ErrAmbiguous) {
					t.Fatalf("Liftable() error = %v; want %q...", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var serials []string
			for _, r := range recs {
				serials = append(serials, r.Serial)
			}
			if strings.Join(serials, " ") != strings.Join(tt.want, " ") {
				t.Errorf("Liftable() = %v; want %v", serials, tt.want)
			}
		})
	}
}

func TestTargetNewest(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	rec := func(serial string, st Status, notAfter time.Time) *Record {
		return &Record{Serial: serial, Name: "n", Status: st, NotAfter: notAfter}
	}
	later := now.Add(time.Hour)
	tests := []struct {
		name       string
		recs       []*Record
		wantNewest string
		wantValid  string
		errNewest  string
		errValid   string
	}{
		{name: "newest valid", recs: []*Record{rec("01", StatusValid, later), rec("02", StatusValid, later)}, wantNewest: "02", wantValid: "02"},
		{name: "newest revoked", recs: []*Record{rec("01", StatusValid, later), rec("02", StatusRevoked, later)}, wantNewest: "02", wantValid: "01"},
		{name: "all expired", recs: []*Record{rec("01", StatusValid, now.Add(-time.Hour))}, wantNewest: "01",
			errValid: `certificate "n" (serial 01) is expired`},
		{name: "pending skipped", recs: []*Record{rec("01", StatusRevoked, later), rec("02", StatusPending, time.Time{})}, wantNewest: "01",
			errValid: `certificate "n" (serial 02) is pending`},
		{name: "only void", recs: []*Record{rec("01", StatusVoid, time.Time{})},
			errNewest: `"n" has no issued certificate`, errValid: `certificate "n" (serial 01) is void`},
	}
	check := func(t *testing.T, what string, r *Record, err error, want, wantErr string) {
		t.Helper()
		if wantErr != "" {
			var ue *UnusableError
			if err == nil || err.Error() != wantErr || !errors.As(err, &ue) {
				t.Errorf("%s error = %v; want %q", what, err, wantErr)
			}
			return
		}
		if err != nil || r.Serial != want {
			t.Errorf("%s = %v, %v; want serial %s", what, r, err, want)
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target := &Target{Arg: "n", Kind: TargetName, Records: tt.recs}
			r, err := target.Newest()
			check(t, "Newest()", r, err, tt.wantNewest, tt.errNewest)
			r, err = target.NewestValid(now)
			check(t, "NewestValid()", r, err, tt.wantValid, tt.errValid)
		})
	}
}

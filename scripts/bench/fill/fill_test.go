package main

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"minica/ca"
	"minica/revoke"
)

var testNow = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func newCA(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ca")
	c, err := ca.Init(dir, ca.InitOptions{CommonName: "Fill Root", Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	return dir
}

// TestFillPublishesTheRevocations checks that minica reads the filled
// records and log: the records have the expected statuses, and the CRL lists
// exactly the serials of the index, with the same reasons.
func TestFillPublishesTheRevocations(t *testing.T) {
	dir := newCA(t)
	index := filepath.Join(t.TempDir(), "index.txt")
	if err := Fill(Options{Dir: dir, Records: 700, Revoked: 300, Index: index, Workers: 3, Now: testNow}); err != nil {
		t.Fatalf("Fill: %v", err)
	}
	c, err := ca.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Now = func() time.Time { return testNow }
	counts := map[ca.Status]int{}
	for r, err := range c.Records() {
		if err != nil {
			t.Fatal(err)
		}
		counts[r.Status]++
	}
	if counts[ca.StatusValid] != 400 || counts[ca.StatusRevoked] != 300 || len(counts) != 2 {
		t.Errorf("record statuses %v; want 400 valid and 300 revoked", counts)
	}
	signer, err := c.LoadSigner(nil)
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.PublishCRL(signer, 0)
	if err != nil {
		t.Fatalf("PublishCRL: %v", err)
	}
	crl, err := x509.ParseRevocationList(info.DER)
	if err != nil {
		t.Fatal(err)
	}
	var onCRL []string
	for _, e := range crl.RevokedCertificateEntries {
		if e.RevocationTime.After(testNow) || !e.RevocationTime.After(testNow.Add(-24*time.Hour-time.Second)) {
			t.Errorf("serial %x revoked at %s; want within the day before %s", e.SerialNumber, e.RevocationTime, testNow)
		}
		onCRL = append(onCRL, strings.ToUpper(ca.SerialHex(e.SerialNumber))+","+revoke.Reason(e.ReasonCode).String())
	}
	inIndex := indexSerials(t, index)
	slices.Sort(onCRL)
	slices.Sort(inIndex)
	if len(onCRL) != 300 || !slices.Equal(onCRL, inIndex) {
		t.Errorf("CRL lists %d serials, index %d; want the same 300", len(onCRL), len(inIndex))
	}
}

// indexSerials returns "SERIAL,reason" for each line of an index.txt,
// checking the fields openssl ca reads.
func indexSerials(t *testing.T, file string) []string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for line := range strings.Lines(string(data)) {
		f := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
		if len(f) != 6 || f[0] != "R" || len(f[1]) != 13 || f[4] != "unknown" || !strings.HasPrefix(f[5], "/CN=bench-fill-") {
			t.Fatalf("index line %q: want R, expiry, revocation, serial, unknown, subject", line)
		}
		at, reason, ok := strings.Cut(f[2], ",")
		if !ok || len(at) != 13 {
			t.Fatalf("index line %q: revocation field %q; want TIME,reason", line, f[2])
		}
		out = append(out, f[3]+","+reason)
	}
	return out
}

func TestFillErrors(t *testing.T) {
	dir := newCA(t)
	existing := filepath.Join(t.TempDir(), "index.txt")
	if err := os.WriteFile(existing, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	noCA := t.TempDir()
	tests := []struct {
		name    string
		o       Options
		wantErr string
	}{
		{name: "more revoked than records", o: Options{Dir: dir, Records: 2, Revoked: 3, Workers: 1},
			wantErr: "invalid fill: 2 records, 3 revoked, 1 workers"},
		{name: "no workers", o: Options{Dir: dir, Records: 2, Workers: 0},
			wantErr: "invalid fill: 2 records, 0 revoked, 0 workers"},
		{name: "not a CA", o: Options{Dir: noCA, Records: 2, Workers: 1},
			wantErr: "opening CA directory \"" + noCA + "\": stat " + filepath.Join(noCA, "ca.crt") + ": no such file or directory"},
		{name: "index exists", o: Options{Dir: dir, Records: 2, Revoked: 1, Index: existing, Workers: 1},
			wantErr: "creating \"" + existing + "\": open " + existing + ": file exists"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Fill(tt.o)
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("Fill() error = %v; want %q", err, tt.wantErr)
			}
		})
	}
}

func TestRunUsage(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{name: "no dir", args: nil, wantCode: 2,
			wantErr: "usage: fill -dir CADIR [-n RECORDS] [-revoked K] [-index FILE] [-workers W]\n"},
		{name: "stray argument", args: []string{"-dir", "x", "y"}, wantCode: 2,
			wantErr: "usage: fill -dir CADIR [-n RECORDS] [-revoked K] [-index FILE] [-workers W]\n"},
		{name: "bad counts", args: []string{"-dir", "x", "-n", "1", "-revoked", "2"}, wantCode: 1,
			wantErr: "fill: error: invalid fill: 1 records, 2 revoked, "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			code := run(tt.args, &stdout, &stderr)
			if code != tt.wantCode || !strings.HasPrefix(stderr.String(), tt.wantErr) || stdout.Len() != 0 {
				t.Fatalf("run(%q) = %d, stderr %q, stdout %q; want %d, stderr starting %q", tt.args, code, stderr.String(), stdout.String(), tt.wantCode, tt.wantErr)
			}
		})
	}
}

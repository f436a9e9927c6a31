package ca

import (
	"crypto"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	filestore "minica/ca/store/file"
	"minica/revoke"
)

func TestRecordsByEmailFile(t *testing.T) {
	c, signer := newTestCA(t, InitOptions{})
	testRecordsByEmail(t, c, signer)
}

func TestRecordsByNamePrefixFile(t *testing.T) {
	c, signer := newTestCA(t, InitOptions{})
	testRecordsByNamePrefix(t, c, signer)
}

// offboardFixture issues, in this order, the certificates a person leaves
// behind and some that are not theirs, and returns the serials by name.
// simon-old is revoked, simon-tablet expired; simon-void never became a
// certificate.
func offboardFixture(t *testing.T, c *CA, signer crypto.Signer) map[string]string {
	t.Helper()
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	serials := map[string]string{}
	issue := func(i int, req Request) {
		t.Helper()
		c.Now = fixedClock(start.Add(time.Duration(i) * time.Hour))
		if req.Profile == "" {
			req.Profile = Client
		}
		is, err := c.Issue(signer, req)
		if err != nil {
			t.Fatalf("Issue(%s): %v", req.Name, err)
		}
		serials[req.Name] = is.Record.Serial
	}
	issue(0, Request{Name: "simon-old", Emails: []string{"simon@example.com"}})
	if _, err := c.RevokeRecord(mustRecordHex(t, c, serials["simon-old"]), revoke.Superseded); err != nil {
		t.Fatal(err)
	}
	issue(1, Request{Name: "simon-tablet", Emails: []string{"simon@example.com"}, Validity: time.Hour})
	issue(2, Request{Name: "simon-laptop", Emails: []string{"Simon@Example.COM"}, EmailInSubject: true})
	issue(3, Request{Name: "shared-kiosk", Emails: []string{"kiosk@example.com", "SIMON@example.com"}})
	issue(4, Request{Name: "simonx", Emails: []string{"simon@example.co", "xsimon@example.com"}})
	issue(5, Request{Name: "simon-web", Profile: Server, DNSNames: []string{"simon.example.com"}})
	issue(6, Request{Name: "alice", Emails: []string{"alice@example.com"}})
	void := &Record{Serial: fmt.Sprintf("%032x", 0xdead), Name: "simon-void", Profile: Client, Status: StatusPending,
		SANs: []string{"email:simon@example.com"}, IssuedAt: start}
	res, err := c.db.Reserve(void)
	if err != nil {
		t.Fatal(err)
	}
	res.Release()
	void.Status = StatusVoid
	if err := c.db.PutRecord(void); err != nil {
		t.Fatal(err)
	}
	c.Now = fixedClock(start.Add(10 * time.Hour)) // simon-tablet has expired
	return serials
}

func mustRecordHex(t *testing.T, c *CA, serial string) *Record {
	t.Helper()
	r, err := c.recordHex(serial)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// namesOf returns the names of recs, in their order.
func namesOf(recs []*Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Name)
	}
	return out
}

func testRecordsByEmail(t *testing.T, c *CA, signer crypto.Signer) {
	serials := offboardFixture(t, c, signer)
	simon := []string{"simon-old", "simon-tablet", "simon-laptop", "shared-kiosk"}
	for _, addr := range []string{"simon@example.com", "SIMON@EXAMPLE.COM", "Simon@example.com"} {
		recs, err := c.RecordsByEmail(addr)
		if err != nil {
			t.Fatalf("RecordsByEmail(%q): %v", addr, err)
		}
		if got := namesOf(recs); !slices.Equal(got, simon) {
			t.Errorf("RecordsByEmail(%q) = %v; want %v, oldest first", addr, got, simon)
		}
		if len(recs) > 0 && (recs[0].Serial != serials["simon-old"] || recs[0].Status != StatusRevoked) {
			t.Errorf("RecordsByEmail(%q)[0] = %s %s; want simon-old's record %s, revoked", addr, recs[0].Serial, recs[0].Status, serials["simon-old"])
		}
	}
	recs, err := c.RecordsByEmail("nobody@example.com")
	if err != nil || len(recs) != 0 {
		t.Errorf("RecordsByEmail(nobody@example.com) = %v, %v; want none and no error", namesOf(recs), err)
	}
	for _, bad := range []string{"", "simon", "simon@", "Simon <simon@example.com>", "simon@exa mple.com"} {
		_, err := c.RecordsByEmail(bad)
		if want := fmt.Sprintf("invalid email %q", bad); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("RecordsByEmail(%q) error = %v; want starting with %q", bad, err, want)
		}
	}
}

func testRecordsByNamePrefix(t *testing.T, c *CA, signer crypto.Signer) {
	offboardFixture(t, c, signer)
	tests := []struct {
		prefix string
		want   []string
	}{
		{"simon-", []string{"simon-old", "simon-tablet", "simon-laptop", "simon-web"}},
		{"simon", []string{"simon-old", "simon-tablet", "simon-laptop", "simonx", "simon-web"}},
		{"Simon-", nil}, // names are compared exactly
		{"alice", []string{"alice"}},
		{"zed", nil},
	}
	for _, tt := range tests {
		recs, err := c.RecordsByNamePrefix(tt.prefix)
		if err != nil {
			t.Fatalf("RecordsByNamePrefix(%q): %v", tt.prefix, err)
		}
		if got := namesOf(recs); !slices.Equal(got, tt.want) {
			t.Errorf("RecordsByNamePrefix(%q) = %v; want %v", tt.prefix, got, tt.want)
		}
	}
	if _, err := c.RecordsByNamePrefix(""); !errors.Is(err, ErrEmptyPrefix) {
		t.Errorf("RecordsByNamePrefix(\"\") error = %v; want ErrEmptyPrefix", err)
	}
	bad := []struct{ prefix, wantErr string }{
		{"-simon", `invalid name "-simon": want 1 to 64 characters`},
		{"a/b", `invalid name "a/b"`},
		{strings.Repeat("a", 65), `invalid name "aaaa`},
		{"simon@", `invalid name "simon@"`},
	}
	for _, tt := range bad {
		if _, err := c.RecordsByNamePrefix(tt.prefix); err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
			t.Errorf("RecordsByNamePrefix(%q) error = %v; want starting with %q", tt.prefix, err, tt.wantErr)
		}
	}
	if _, err := c.RecordsByNamePrefix("simon@"); !errors.Is(err, ErrNameAt) {
		t.Errorf("RecordsByNamePrefix(simon@) error = %v; want ErrNameAt", err)
	}
}

// A record that does not decode might be the person's: the search fails
// rather than miss it.
func TestRecordsByEmailCorruptRecord(t *testing.T) {
	c, signer := newTestCA(t, InitOptions{})
	is, err := c.Issue(signer, Request{Name: "simon", Profile: Client, Emails: []string{"simon@example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(c.Dir().Path(), filepath.FromSlash(filestore.RecordPath(is.Record.Serial)))
	if err := os.WriteFile(file, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	var corrupt *CorruptRecordError
	if _, err := c.RecordsByEmail("simon@example.com"); !errors.As(err, &corrupt) || corrupt.Serial != is.Record.Serial {
		t.Errorf("RecordsByEmail() error = %v; want a *CorruptRecordError for %s", err, is.Record.Serial)
	}
	if _, err := c.RecordsByNamePrefix("si"); !errors.As(err, &corrupt) {
		t.Errorf("RecordsByNamePrefix() error = %v; want a *CorruptRecordError", err)
	}
}

func TestSettledRecordsFile(t *testing.T) {
	c, signer := newTestCA(t, InitOptions{})
	testSettledRecords(t, c, signer)
}

// The CA's interrupted issuances are settled before the search returns: the one whose certificate was signed is completed (and
// returned, to be revoked), the one that never was is voided (and left
// out); nothing pending is left for check to complete later.
func testSettledRecords(t *testing.T, c *CA, signer crypto.Signer) {
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	c.Now = fixedClock(start)
	if _, err := c.Issue(signer, Request{Name: "simon-laptop", Profile: Client, Emails: []string{"simon@example.com"}}); err != nil {
		t.Fatal(err)
	}
	c.Now = fixedClock(start.Add(time.Hour))
	db := c.db
	c.db = &failingStore{database: db, complete: true}
	if _, err := c.Issue(signer, Request{Name: "simon-phone", Profile: Client, Emails: []string{"simon@example.com"}}); err == nil {
		t.Fatal("Issue with a failing Complete succeeded")
	}
	c.db = db
	c.Now = fixedClock(start.Add(2 * time.Hour))
	lost := &Record{Serial: fmt.Sprintf("%032x", 0xbeef), Name: "simon-tablet", Profile: Client, Status: StatusPending,
		IssuedAt: c.Now()}
	res, err := c.db.Reserve(lost)
	if err != nil {
		t.Fatal(err)
	}
	res.Release()
	find := func() ([]*Record, error) { return c.RecordsByEmail("simon@example.com") }
	// A pending record holds no SANs: no search by address finds it.
	before, err := find()
	if got, want := namesOf(before), []string{"simon-laptop"}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("before settling: %v, %v; want %v", got, err, want)
	}
	recs, finished, err := c.SettledRecords(find)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := namesOf(recs), []string{"simon-laptop", "simon-phone"}; !slices.Equal(got, want) {
		t.Errorf("SettledRecords() = %v; want %v", got, want)
	}
	for _, r := range recs {
		if r.Status != StatusValid {
			t.Errorf("%s (serial %s) is %s after settling; want valid", r.Name, r.Serial, r.Status)
		}
	}
	if !slices.ContainsFunc(finished, func(s string) bool { return strings.HasPrefix(s, "completed the interrupted issuance of simon-phone") }) ||
		!slices.ContainsFunc(finished, func(s string) bool { return strings.HasPrefix(s, "voided serial "+lost.Serial+" of simon-tablet") }) {
		t.Errorf("SettledRecords() finished %q; want simon-phone completed and simon-tablet voided", finished)
	}
	if r := mustRecordHex(t, c, lost.Serial); r.Status != StatusVoid {
		t.Errorf("the issuance that signed nothing is %s; want void", r.Status)
	}
	// Nothing pending: a second call settles nothing.
	if _, finished, err := c.SettledRecords(find); err != nil || len(finished) != 0 {
		t.Errorf("second SettledRecords() finished %q, %v; want nothing", finished, err)
	}
}

package ca

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// clientRequests returns n client requests named prefix1..prefixN.
func clientRequests(prefix string, n int) []Request {
	reqs := make([]Request, n)
	for i := range reqs {
		name := fmt.Sprintf("%s%d", prefix, i+1)
		reqs[i] = Request{Name: name, Profile: Client, Emails: []string{name + "@example.com"}, EmailInSubject: true}
	}
	return reqs
}

// realProblems leaves out the CRL that a test CA never published.
func realProblems(rep *CheckReport) []string {
	return slices.DeleteFunc(slices.Clone(rep.Problems), func(p string) bool { return strings.HasPrefix(p, "no CRL published") })
}

func TestIssueBatch(t *testing.T) {
	c, signer := newTestCA(t, InitOptions{})
	reqs := clientRequests("u", 10)
	var got []int
	n, err := c.IssueBatch(signer, slices.Values(reqs), BatchOptions{GroupSize: 4}, func(r BatchResult) error {
		// Reported only once durable and complete: the record is valid.
		rec, err := c.recordHex(r.Issued.Record.Serial)
		if err != nil || rec.Status != StatusValid {
			t.Errorf("record of %s when reported: %v, %v; want valid", r.Request.Name, rec, err)
		}
		got = append(got, r.Index)
		return nil
	})
	if err != nil || n != 10 {
		t.Fatalf("IssueBatch = %d, %v; want 10, nil", n, err)
	}
	if want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}; !slices.Equal(got, want) {
		t.Errorf("reported %v; want %v", got, want)
	}
	rep, err := c.Check()
	if err != nil || len(rep.Repaired)+len(realProblems(rep)) != 0 || rep.Records != 10 {
		t.Errorf("Check after the batch = %+v, %v; want 10 records, nothing to repair", rep, err)
	}
	cur, err := c.Current("u3")
	if err != nil || cur == nil || cur.Status != StatusValid {
		t.Errorf("Current(u3) = %v, %v", cur, err)
	}
}

// A request that fails stops the batch after its group: the others of the
// group are still made durable and reported, the later groups never start.
func TestIssueBatchStopsAtBadRequest(t *testing.T) {
	c, signer := newTestCA(t, InitOptions{})
	reqs := clientRequests("u", 8)
	reqs[3].Emails = []string{"not an email"}
	var names []string
	n, err := c.IssueBatch(signer, slices.Values(reqs), BatchOptions{GroupSize: 5}, func(r BatchResult) error {
		names = append(names, r.Request.Name)
		return nil
	})
	if n != 4 || err == nil || !strings.Contains(err.Error(), `request 4 ("u4"): invalid email`) {
		t.Fatalf("IssueBatch = %d, %v; want 4 and an error naming request 4", n, err)
	}
	if !slices.Equal(names, []string{"u1", "u2", "u3", "u5"}) {
		t.Errorf("reported %v", names)
	}
	rep, err := c.Check()
	if err != nil || len(rep.Repaired)+len(realProblems(rep)) != 0 || rep.Records != 4 {
		t.Errorf("Check = %+v, %v; want 4 records, nothing to repair", rep, err)
	}
}

// A report that fails stops the batch: the rest of its group is durable
// and complete, but not reported; the later groups never start.
func TestIssueBatchReportFails(t *testing.T) {
	c, signer := newTestCA(t, InitOptions{})
	stop := errors.New("stop")
	n, err := c.IssueBatch(signer, slices.Values(clientRequests("u", 6)), BatchOptions{GroupSize: 3}, func(r BatchResult) error {
		if r.Index == 1 {
			return stop
		}
		return nil
	})
	if n != 1 || !errors.Is(err, stop) {
		t.Fatalf("IssueBatch = %d, %v; want 1, stop", n, err)
	}
	rep, err := c.Check()
	if err != nil || rep.Records != 3 {
		t.Fatalf("Check = %+v, %v; want 3 records", rep, err)
	}
	if len(rep.Repaired) != 0 {
		t.Errorf("Check repaired %q; want nothing", rep.Repaired)
	}
}

// A name given twice is issued twice only with Force, never in one group.
func TestIssueBatchSameNameTwice(t *testing.T) {
	c, signer := newTestCA(t, InitOptions{})
	reqs := []Request{{Name: "a", Profile: Client}, {Name: "b", Profile: Client}, {Name: "a", Profile: Client, Force: true}, {Name: "a", Profile: Client}}
	var serials []string
	n, err := c.IssueBatch(signer, slices.Values(reqs), BatchOptions{}, func(r BatchResult) error {
		serials = append(serials, r.Issued.Record.Serial)
		return nil
	})
	if n != 3 || !errors.Is(err, ErrNameTaken) || !strings.Contains(err.Error(), "request 4") {
		t.Fatalf("IssueBatch = %d, %v; want 3 and request 4's name taken", n, err)
	}
	recs, err := c.RecordsByName("a")
	if err != nil || len(recs) != 2 {
		t.Fatalf("RecordsByName(a) = %d records, %v; want 2", len(recs), err)
	}
	cur, err := c.Current("a")
	if err != nil || cur == nil || cur.Serial != serials[2] {
		t.Errorf("Current(a) = %v, %v; want the forced one, %s", cur, err, serials[2])
	}
}

func TestCheckRequest(t *testing.T) {
	c, signer := newTestCA(t, InitOptions{})
	first := clientRequests("u", 1)
	if _, err := c.IssueBatch(signer, slices.Values(first), BatchOptions{}, func(BatchResult) error { return nil }); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		req      Request
		wantSkip bool
		wantErr  string
	}{
		{name: "same identity", req: first[0], wantSkip: true},
		{name: "new name", req: clientRequests("v", 1)[0]},
		{name: "other email", req: Request{Name: "u1", Profile: Client, Emails: []string{"x@example.com"}, EmailInSubject: true}, wantErr: `a certificate named "u1" already exists`},
		{name: "other profile", req: Request{Name: "u1", Profile: Server, DNSNames: []string{"u1.example.com"}}, wantErr: `a certificate named "u1" already exists`},
		{name: "forced", req: Request{Name: "u1", Profile: Client, Force: true}},
		{name: "bad name", req: Request{Name: "../x", Profile: Client}, wantErr: "invalid name"},
		{name: "outlives the CA", req: Request{Name: "w", Profile: Client, Validity: 100 * 365 * 24 * 3600e9}, wantErr: "outlive the CA"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, err := c.CheckRequest(tt.req)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("CheckRequest() error = %v; want containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || (rec != nil) != tt.wantSkip {
				t.Fatalf("CheckRequest() = %v, %v; want skip %v", rec, err, tt.wantSkip)
			}
		})
	}
}

// Where there is no syncfs, a group's files and directories are synced one
// by one; the result is the same.
func TestIssueBatchSyncEach(t *testing.T) {
	c, signer := newTestCA(t, InitOptions{})
	c.syncEach = true
	n, err := c.IssueBatch(signer, slices.Values(clientRequests("u", 7)), BatchOptions{GroupSize: 3, Workers: 2}, func(BatchResult) error { return nil })
	if err != nil || n != 7 {
		t.Fatalf("IssueBatch = %d, %v; want 7, nil", n, err)
	}
	rep, err := c.Check()
	if err != nil || len(rep.Repaired)+len(realProblems(rep)) != 0 || rep.Records != 7 {
		t.Errorf("Check = %+v, %v; want 7 records, nothing to repair", rep, err)
	}
}

func TestBatchUnderHierarchy(t *testing.T) {
	root, inter := newHierarchy(t, Constraints{PermittedEmails: []string{"example.com"}})
	none := func(BatchResult) error { return nil }
	if _, err := root.CheckRequest(clientRequests("r", 1)[0]); !errors.Is(err, ErrRootCA) {
		t.Errorf("CheckRequest on a root: error = %v; want ErrRootCA", err)
	}
	if _, err := root.IssueBatch(signerOf(t, root), slices.Values(clientRequests("r", 1)), BatchOptions{}, none); !errors.Is(err, ErrRootCA) {
		t.Errorf("IssueBatch on a root: error = %v; want ErrRootCA", err)
	}
	outside := Request{Name: "eve", Profile: Client, Emails: []string{"eve@example.org"}}
	if _, err := inter.CheckRequest(outside); err == nil || !strings.Contains(err.Error(), "example.org") {
		t.Errorf("CheckRequest outside the constraints: error = %v; want one naming example.org", err)
	}
	n, err := inter.IssueBatch(signerOf(t, inter), slices.Values(clientRequests("u", 2)), BatchOptions{}, none)
	if err != nil || n != 2 {
		t.Fatalf("IssueBatch under the intermediate = %d, %v; want 2, nil", n, err)
	}
	if n := countRecords(t, root); n != 1 {
		t.Errorf("root has %d records; want 1 (the intermediate)", n)
	}
}

package ca

import (
	"os"
	"strings"
	"testing"
	"time"
)

// serialsOf lists the serials of records, in order.
func serialsOf(recs []*Record) string {
	var s []string
	for _, r := range recs {
		s = append(s, r.Serial)
	}
	return strings.Join(s, " ")
}

// The records, not the certs/ tree, say which certificates a name has:
// listing certs/NAME is not needed, a CA directory without a name index
// (an older minica) still answers, and Check and the next issuance build
// the index.
func TestRecordsByNameFromRecords(t *testing.T) {
	start := time.Now().UTC().Truncate(time.Second)
	c, signer := newTestCA(t, InitOptions{})
	c.Now = fixedClock(start)
	issue := func(name string, force bool) *Record {
		t.Helper()
		is, err := c.Issue(signer, Request{Name: name, Profile: Client, Force: force})
		if err != nil {
			t.Fatalf("Issue %s: %v", name, err)
		}
		return is.Record
	}
	a1 := issue("alice", false)
	c.Now = fixedClock(start.Add(time.Minute))
	a2 := issue("alice", true)
	b1 := issue("bob", false)
	want := a1.Serial + " " + a2.Serial

	lookup := func(t *testing.T, name, want string) {
		t.Helper()
		recs, err := c.RecordsByName(name)
		if err != nil {
			t.Fatalf("RecordsByName(%q): %v", name, err)
		}
		if got := serialsOf(recs); got != want {
			t.Errorf("RecordsByName(%q) = %q; want %q", name, got, want)
		}
	}
	t.Run("certs tree elsewhere", func(t *testing.T) {
		if err := os.Rename(c.Path("certs/alice"), c.Path("alice-moved")); err != nil {
			t.Fatal(err)
		}
		defer os.Rename(c.Path("alice-moved"), c.Path("certs/alice"))
		lookup(t, "alice", want)
		lookup(t, "bob", b1.Serial)
		lookup(t, "nobody", "")
	})
	t.Run("torn index line", func(t *testing.T) {
		f, err := os.OpenFile(c.Path(nameIndexPath("alice")), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(a1.Serial + "\n" + "0123")
		f.Close()
		lookup(t, "alice", want)
	})
	t.Run("no index", func(t *testing.T) {
		if err := os.RemoveAll(c.Path(nameIndexDir)); err != nil {
			t.Fatal(err)
		}
		lookup(t, "alice", want)
		if _, err := c.Check(); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(c.Path(nameIndexPath("alice")))
		if err != nil || string(data) != a1.Serial+"\n"+a2.Serial+"\n" && string(data) != a2.Serial+"\n"+a1.Serial+"\n" {
			t.Errorf("index of alice after Check = %q, %v; want its two serials", data, err)
		}
		lookup(t, "alice", want)
	})
	t.Run("first issuance builds it", func(t *testing.T) {
		if err := os.RemoveAll(c.Path(nameIndexDir)); err != nil {
			t.Fatal(err)
		}
		c.Now = fixedClock(start.Add(2 * time.Minute))
		b2 := issue("bob", true)
		lookup(t, "bob", b1.Serial+" "+b2.Serial)
		lookup(t, "alice", want)
		entries, _ := os.ReadDir(c.Path("db"))
		for _, e := range entries {
			if isTemp(e.Name()) {
				t.Errorf("left %s in db/", e.Name())
			}
		}
	})
}

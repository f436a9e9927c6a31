package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"minica/ca/store"
)

// The cases of store.ACMEStore: objects by kind and ID, and nonces.

func object(kind, id, data string) store.Object {
	return store.Object{Kind: kind, ID: id, Data: []byte(data)}
}

// wantObject fails t unless db holds o as it is.
func wantObject(t *testing.T, db store.Store, o store.Object) {
	t.Helper()
	got, err := db.Object(o.Kind, o.ID)
	if err != nil || got.Kind != o.Kind || got.ID != o.ID || !bytes.Equal(got.Data, o.Data) {
		t.Errorf("Object(%s, %s) = %q %q %q, %v; want data %q", o.Kind, o.ID, got.Kind, got.ID, got.Data, err, o.Data)
	}
}

// wantNoObject fails t unless db's Object of kind and id matches
// fs.ErrNotExist.
func wantNoObject(t *testing.T, db store.Store, kind, id string) {
	t.Helper()
	if got, err := db.Object(kind, id); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Object(%q, %q) = %q, %v; want an error matching fs.ErrNotExist", kind, id, got.Data, err)
	}
}

// objectIDs returns the IDs that db's Objects(kind) streams, in order,
// failing t on an error or an object of another kind.
func objectIDs(t *testing.T, db store.Store, kind string) []string {
	t.Helper()
	var ids []string
	for o, err := range db.Objects(kind) {
		if err != nil {
			t.Fatalf("Objects(%s): %v", kind, err)
		}
		if o.Kind != kind {
			t.Errorf("Objects(%s) yielded %s %s", kind, o.Kind, o.ID)
		}
		ids = append(ids, o.ID)
	}
	return ids
}

func testStoreObjects(t *testing.T, h *Harness) {
	first := object("accounts", "acct1", `{"status":"valid"}`)
	if err := h.Store.CreateObject(first); err != nil {
		t.Fatal(err)
	}
	wantObject(t, h.Store, first)
	// A taken kind and ID: fs.ErrExist, and the first object stays.
	if err := h.Store.CreateObject(object("accounts", "acct1", `{"other":true}`)); !errors.Is(err, fs.ErrExist) {
		t.Errorf("CreateObject(taken) error = %v; want fs.ErrExist", err)
	}
	wantObject(t, h.Store, first)
	// The same ID in another kind is another object.
	order := object("orders", "acct1", `{"order":1}`)
	if err := h.Store.CreateObject(order); err != nil {
		t.Fatalf("CreateObject(another kind, same ID): %v", err)
	}
	replaced := object("accounts", "acct1", `{"status":"deactivated"}`)
	if err := h.Store.PutObject(replaced); err != nil {
		t.Fatal(err)
	}
	wantObject(t, h.Store, replaced)
	wantObject(t, h.Store, order)
	// PutObject creates an object that does not exist yet.
	fresh := object("accounts", "acct2", `{}`)
	if err := h.Store.PutObject(fresh); err != nil {
		t.Fatal(err)
	}
	wantObject(t, h.Store, fresh)
	wantNoObject(t, h.Store, "accounts", "nobody")
	wantNoObject(t, h.Store, "authz", "acct1")
	if err := h.Store.DeleteObject("accounts", "acct1"); err != nil {
		t.Fatal(err)
	}
	wantNoObject(t, h.Store, "accounts", "acct1")
	wantObject(t, h.Store, order)
	for _, k := range [][2]string{{"accounts", "acct1"}, {"accounts", "nobody"}, {"authz", "acct1"}} {
		if err := h.Store.DeleteObject(k[0], k[1]); err != nil {
			t.Errorf("DeleteObject(%s, %s) of no object: %v; want nil", k[0], k[1], err)
		}
	}
}

// Volatile writes read back as durable ones do, and keep CreateObject's
// refusal of a taken ID.
func testStoreVolatileObjects(t *testing.T, h *Harness) {
	o := object("authz", "az1", `{"status":"pending"}`)
	o.Volatile = true
	if err := h.Store.CreateObject(o); err != nil {
		t.Fatal(err)
	}
	wantObject(t, h.Store, o)
	if err := h.Store.CreateObject(o); !errors.Is(err, fs.ErrExist) {
		t.Errorf("a volatile CreateObject of a taken ID = %v; want fs.ErrExist", err)
	}
	o.Data = []byte(`{"status":"valid"}`)
	if err := h.Store.PutObject(o); err != nil {
		t.Fatal(err)
	}
	wantObject(t, h.Store, o)
	if ids := objectIDs(t, h.Store, "authz"); !slices.Equal(ids, []string{"az1"}) {
		t.Errorf("Objects(authz) after volatile writes = %v; want [az1] (no temporary file listed)", ids)
	}
}

func testStoreObjectsOrder(t *testing.T, h *Harness) {
	if kinds, err := h.Store.ObjectKinds(); err != nil || len(kinds) != 0 {
		t.Errorf("ObjectKinds() of a new store = %q, %v; want none", kinds, err)
	}
	// IDs one a prefix of the next: ID order is not file-name order.
	ids := []string{"b", "a.b", "a", "A", "a-b", "a_b", "0"}
	for _, id := range ids {
		if err := h.Store.CreateObject(object("orders", id, id)); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range []store.Object{object("authz", "a", "x"), object("accounts", "z", "y"), object("challenges", "c", "z")} {
		if err := h.Store.CreateObject(o); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Store.AddNonce(strings.Repeat("n", 22), storeT0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	slices.Sort(ids) // byte order
	if got := objectIDs(t, h.Store, "orders"); !slices.Equal(got, ids) {
		t.Errorf("Objects(orders) = %q; want %q (ID order)", got, ids)
	}
	if got := objectIDs(t, h.Store, "nothing"); len(got) != 0 {
		t.Errorf("Objects(nothing) = %q; want none", got)
	}
	// A kind whose last object is deleted holds none.
	if err := h.Store.DeleteObject("challenges", "c"); err != nil {
		t.Fatal(err)
	}
	want := []string{"accounts", "authz", "orders"}
	if kinds, err := h.Store.ObjectKinds(); err != nil || !slices.Equal(kinds, want) {
		t.Errorf("ObjectKinds() = %q, %v; want %q (sorted, no nonces, no empty kind)", kinds, err, want)
	}
}

// badKinds and badIDs are refused by every method of ACMEStore: a name
// that could reach outside the engine's place for objects, or the
// nonces'.
var (
	badKinds = []string{"", "../x", "nonces", "Orders", "-x", "a/b", "a.b", strings.Repeat("a", 33)}
	badIDs   = []string{"", "../x", ".x", "-x", "a/b", "a b", `a\b`, strings.Repeat("a", 129)}
)

func testStoreObjectNames(t *testing.T, h *Harness) {
	try := func(kind, id string) {
		t.Helper()
		o := object(kind, id, "{}")
		if err := h.Store.CreateObject(o); err == nil {
			t.Errorf("CreateObject(%q, %q) succeeded; want refused", kind, id)
		}
		if err := h.Store.PutObject(o); err == nil {
			t.Errorf("PutObject(%q, %q) succeeded; want refused", kind, id)
		}
		if err := h.Store.DeleteObject(kind, id); err == nil {
			t.Errorf("DeleteObject(%q, %q) succeeded; want refused", kind, id)
		}
		wantNoObject(t, h.Store, kind, id)
	}
	for _, kind := range badKinds {
		try(kind, "x")
		n := 0
		for _, err := range h.Store.Objects(kind) {
			if n++; err == nil {
				t.Errorf("Objects(%q) yielded an object; want an error", kind)
			}
		}
		if n != 1 {
			t.Errorf("Objects(%q) yielded %d times; want one error", kind, n)
		}
	}
	for _, id := range badIDs {
		try("orders", id)
	}
	if kinds, err := h.Store.ObjectKinds(); err != nil || len(kinds) != 0 {
		t.Errorf("ObjectKinds() after refused writes = %q, %v; want none", kinds, err)
	}
}

func testStoreNonces(t *testing.T, h *Harness) {
	good, expired := "Zm9vYmFyYmF6cXV4MTIzNA", "ZXhwaXJlZC1ub25jZS0xMjM0"
	if err := h.Store.AddNonce(good, storeT0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := h.Store.AddNonce(expired, storeT0); err != nil {
		t.Fatal(err)
	}
	use := func(nonce string, now time.Time, want bool) {
		t.Helper()
		if got, err := h.Store.UseNonce(nonce, now); err != nil || got != want {
			t.Errorf("UseNonce(%q) = %v, %v; want %v", nonce, got, err, want)
		}
	}
	use("bm90LWFkZGVkLW5vbmNlLTEy", storeT0, false) // never added
	use(expired, storeT0, false)                    // expired at now
	use(good, storeT0.Add(time.Minute-time.Second), true)
	use(good, storeT0, false) // used
	for _, bad := range []string{"", "short", "a/b/../../../../etc/passwd", strings.Repeat("a", 15) + "=", strings.Repeat("a", 65), "../" + good} {
		use(bad, storeT0, false)
		if err := h.Store.AddNonce(bad, storeT0.Add(time.Hour)); err == nil {
			t.Errorf("AddNonce(%q) succeeded; want refused", bad)
		}
	}
}

// testStoreNonceRace uses one nonce from 20 goroutines over two handles:
// exactly one is told it is good.
func testStoreNonceRace(t *testing.T, h *Harness) {
	const nonce = "cmFjZWQtbm9uY2UtMTIzNDU2"
	if err := h.Store.AddNonce(nonce, storeT0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	handles := []store.Store{h.Store, h.Open(t)}
	var wg sync.WaitGroup
	results := make([]bool, 20)
	errs := make([]error, len(results))
	for i := range results {
		wg.Go(func() { results[i], errs[i] = handles[i%2].UseNonce(nonce, storeT0) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if n := len(slices.DeleteFunc(results, func(ok bool) bool { return !ok })); n != 1 {
		t.Errorf("%d of %d concurrent UseNonce calls reported the nonce good; want 1", n, len(errs))
	}
}

// testStoreACMEHandles writes through one handle and reads through
// another, as the replicas of serve do.
func testStoreACMEHandles(t *testing.T, h *Harness) {
	other := h.Open(t)
	o := object("accounts", "acct1", `{"key":"k"}`)
	if err := h.Store.CreateObject(o); err != nil {
		t.Fatal(err)
	}
	wantObject(t, other, o)
	if err := other.CreateObject(o); !errors.Is(err, fs.ErrExist) {
		t.Errorf("CreateObject(taken) through another handle error = %v; want fs.ErrExist", err)
	}
	o.Data = []byte(`{"key":"k2"}`)
	if err := other.PutObject(o); err != nil {
		t.Fatal(err)
	}
	wantObject(t, h.Store, o)
	for i, pair := range [][2]store.Store{{h.Store, other}, {other, h.Store}} {
		nonce := fmt.Sprintf("aGFuZGxlcy1ub25jZS0xMjM0%d", i)
		if err := pair[0].AddNonce(nonce, storeT0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		for j, want := range []bool{true, false} {
			if got, err := pair[1-j].UseNonce(nonce, storeT0); err != nil || got != want {
				t.Errorf("UseNonce(%s) #%d = %v, %v; want %v", nonce, j+1, got, err, want)
			}
		}
	}
	if err := other.DeleteObject(o.Kind, o.ID); err != nil {
		t.Fatal(err)
	}
	wantNoObject(t, h.Store, o.Kind, o.ID)
}

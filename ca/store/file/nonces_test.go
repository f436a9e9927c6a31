package file

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"minica/ca/store"
	"minica/internal/cadir"
)

var nonceT0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func newNonceStore(t *testing.T) (*Store, string) { return newTestStore(t, Options{}) }

// newTestStore returns a file store with options o in a new directory
// laid out by Create, without a CA certificate (what needs none), and the
// directory's path.
func newTestStore(t *testing.T, o Options) (*Store, string) {
	t.Helper()
	p := t.TempDir()
	d, err := cadir.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if err := Create(d); err != nil {
		t.Fatal(err)
	}
	s := New(d, nil, o)
	t.Cleanup(func() { s.Close() })
	return s, p
}

// collidingNonces returns two nonces of one slot: serials NonceSerials
// apart.
func collidingNonces(t *testing.T) (string, string) {
	t.Helper()
	a, b := store.NewNonce(7), store.NewNonce(7+store.NonceSerials)
	offA, _ := nonceLocation(a)
	offB, _ := nonceLocation(b)
	if offA != offB {
		t.Fatalf("nonces %s and %s of one serial are in slots %d and %d", a, b, offA, offB)
	}
	return a, b
}

// TestNonceSlotsInTurn: the nonces of consecutive serials fill
// consecutive slots, so that none is overwritten before NonceSerials
// later ones.
func TestNonceSlotsInTurn(t *testing.T) {
	s, _ := newNonceStore(t)
	first := store.NewNonce(store.NonceSerials - 1)
	if err := s.AddNonce(first, nonceT0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for i := range uint32(store.NonceSerials - 1) {
		off, _ := nonceLocation(store.NewNonce(i))
		if seen[off] {
			t.Fatalf("nonce of serial %d in a slot taken already", i)
		}
		seen[off] = true
		if i%4096 == 0 {
			if err := s.AddNonce(store.NewNonce(i), nonceT0.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if ok, err := s.UseNonce(first, nonceT0); err != nil || !ok {
		t.Errorf("UseNonce of the first of NonceSerials nonces = %v, %v; want true", ok, err)
	}
}

// TestNonceReplacedInItsSlot: a nonce whose slot a later one took is
// unknown; the later one is good once.
func TestNonceReplacedInItsSlot(t *testing.T) {
	s, _ := newNonceStore(t)
	first, second := collidingNonces(t)
	for _, n := range []string{first, second} {
		if err := s.AddNonce(n, nonceT0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		nonce string
		want  bool
	}{{first, false}, {second, true}, {second, false}} {
		if got, err := s.UseNonce(c.nonce, nonceT0); err != nil || got != c.want {
			t.Errorf("UseNonce(%s) = %v, %v; want %v", c.nonce, got, err, c.want)
		}
	}
}

// TestNonceTableIsOneFile: a thousand nonces, added and used, leave one
// file of 0600 in db/acme and no other.
func TestNonceTableIsOneFile(t *testing.T) {
	s, p := newNonceStore(t)
	for i := range uint32(1000) {
		n := store.NewNonce(i)
		if err := s.AddNonce(n, nonceT0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			if ok, err := s.UseNonce(n, nonceT0); err != nil || !ok {
				t.Fatalf("UseNonce(%s) = %v, %v; want true", n, ok, err)
			}
		}
	}
	entries, err := os.ReadDir(filepath.Join(p, ACMEDir))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != filepath.Base(NonceTable) {
		t.Errorf("db/acme holds %v; want only %s", entries, filepath.Base(NonceTable))
	}
	st, err := os.Stat(filepath.Join(p, NonceTable))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 || st.Size() > nonceSlots*nonceSlot {
		t.Errorf("%s: mode %v, %d bytes; want 0600 and at most %d bytes", NonceTable, st.Mode().Perm(), st.Size(), nonceSlots*nonceSlot)
	}
}

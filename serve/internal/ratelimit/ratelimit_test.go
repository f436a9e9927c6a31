package ratelimit

import (
	"testing"
	"time"
)

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// allowN calls Allow n times for addr at now and returns how many passed.
func allowN(l *Limits, addr string, now time.Time, n int) int {
	ok := 0
	for range n {
		if _, allowed := l.Allow(addr, now); allowed {
			ok++
		}
	}
	return ok
}

func TestAllowPerAddress(t *testing.T) {
	l := New(6, 3, 600, 100, 10) // 6 a minute: one every 10 s
	if got := allowN(l, "192.0.2.1", t0, 5); got != 3 {
		t.Fatalf("a burst of 5 from one address: %d allowed; want 3", got)
	}
	wait, ok := l.Allow("192.0.2.1", t0)
	if ok || wait != 10*time.Second {
		t.Fatalf("Allow past the burst = %s, %v; want 10s, false", wait, ok)
	}
	if got := allowN(l, "192.0.2.2", t0, 3); got != 3 {
		t.Errorf("another address: %d allowed; want 3 (its own burst)", got)
	}
	if got := allowN(l, "192.0.2.1", t0.Add(10*time.Second), 2); got != 1 {
		t.Errorf("10 s later: %d allowed; want 1", got)
	}
}

func TestAllowTotal(t *testing.T) {
	l := New(60, 10, 60, 4, 10)
	allowed := 0
	for _, a := range []string{"a", "b", "c"} {
		allowed += allowN(l, a, t0, 2)
	}
	if allowed != 4 {
		t.Fatalf("three addresses, two each: %d allowed; want 4 (the total's burst)", allowed)
	}
	// A refusal by the total takes nothing from the address.
	if got := allowN(l, "d", t0.Add(time.Second), 10); got != 1 {
		t.Fatalf("a second later: %d allowed; want 1", got)
	}
	if got := l.addrs["d"].tokens; got != 9 {
		t.Errorf("d's bucket holds %v tokens; want 9 (its burst less the one allowed)", got)
	}
}

func TestTableBounded(t *testing.T) {
	l := New(60, 1, 6000, 1000, 2)
	allowN(l, "a", t0, 1)
	allowN(l, "b", t0, 1)
	if wait, ok := l.Allow("c", t0); ok || wait != time.Minute {
		t.Fatalf("a third address with the table full of busy ones = %s, %v; want 1m, false", wait, ok)
	}
	// A second later a and b have refilled: they are dropped for c.
	if _, ok := l.Allow("c", t0.Add(time.Second)); !ok {
		t.Fatal("a third address once the others are idle was refused")
	}
	if n := len(l.addrs); n != 1 {
		t.Errorf("table holds %d addresses; want 1", n)
	}
}

func TestReturn(t *testing.T) {
	l := New(6, 2, 600, 3, 10)
	for range 5 {
		if _, ok := l.Allow("a", t0); !ok {
			t.Fatal("a request whose token was returned was refused")
		}
		l.Return("a", t0)
	}
	if got := allowN(l, "a", t0, 3); got != 2 {
		t.Errorf("after returns: %d allowed; want the burst, 2", got)
	}
	l.Return("a", t0)
	l.Return("a", t0)
	l.Return("a", t0) // never above the burst
	if got := allowN(l, "a", t0, 3); got != 2 {
		t.Errorf("after returns beyond the burst: %d allowed; want the burst, 2", got)
	}
}

func TestKey(t *testing.T) {
	for _, tt := range []struct{ remote, want string }{
		{"192.0.2.7:41000", "192.0.2.7"},
		{"[2001:db8:1:2:3:4:5:6]:443", "2001:db8:1:2::/64"},
		{"2001:db8:1:2::9", "2001:db8:1:2::/64"},
		{"@", "@"},
	} {
		if got := Key(Host(tt.remote)); got != tt.want {
			t.Errorf("Key(Host(%q)) = %q; want %q", tt.remote, got, tt.want)
		}
	}
}

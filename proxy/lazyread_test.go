package proxy

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

func lazyPipe(t *testing.T) (*lazyConn, net.Conn) {
	t.Helper()
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	return newLazyConn(a), b
}

// A deadline asked for ends a read at that time, whether it was asked for
// before the read or during it.
func TestLazyReadDeadlineEndsRead(t *testing.T) {
	lc, _ := lazyPipe(t)
	lc.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	start := time.Now()
	if _, err := lc.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read = %v; want a deadline error", err)
	}
	if d := time.Since(start); d < 15*time.Millisecond || d > 2*time.Second {
		t.Errorf("the read ended after %v; want about 20ms", d)
	}
	// During a read, with a later deadline in force.
	lc.SetReadDeadline(time.Now().Add(time.Hour))
	go func() {
		time.Sleep(20 * time.Millisecond)
		lc.SetReadDeadline(aLongTimeAgo)
	}()
	if _, err := lc.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read = %v; want a deadline error", err)
	}
	// Reads go on past the time of earlier deadlines once none is asked for.
	lc.SetReadDeadline(time.Time{})
	if err := lc.SetDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
}

// A read under a later deadline than the one in force, or none, is not
// ended by the earlier one: it gets the data that comes after it.
func TestLazyReadOutlivesEarlierDeadline(t *testing.T) {
	for _, later := range []time.Duration{0, time.Hour} {
		lc, peer := lazyPipe(t)
		lc.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		go peer.Write([]byte("a"))
		if _, err := lc.Read(make([]byte, 1)); err != nil { // puts the deadline in force
			t.Fatal(err)
		}
		want := time.Time{}
		if later > 0 {
			want = time.Now().Add(later)
		}
		lc.SetReadDeadline(want)
		if !earlier(lc.lr.set, want) {
			t.Fatalf("later %v: the deadline in force moved (%v); want it left", later, lc.lr.set)
		}
		go func() {
			time.Sleep(50 * time.Millisecond)
			peer.Write([]byte("b"))
		}()
		b := make([]byte, 1)
		if n, err := lc.Read(b); err != nil || n != 1 || b[0] != 'b' {
			t.Fatalf("later %v: Read = %d %q, %v; want the byte sent after the earlier deadline", later, n, b[:n], err)
		}
	}
}

// settle puts the deadline asked for in force, for a reader of the socket.
func TestLazyReadSettle(t *testing.T) {
	lc, peer := lazyPipe(t)
	lc.SetReadDeadline(aLongTimeAgo)
	lc.Read(make([]byte, 1)) // in force now
	lc.SetReadDeadline(time.Time{})
	lc.lr.settle()
	go peer.Write([]byte("c"))
	if _, err := lc.lr.conn.Read(make([]byte, 1)); err != nil {
		t.Errorf("a read of the socket after settle: %v", err)
	}
}

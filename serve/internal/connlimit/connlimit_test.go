package connlimit

import (
	"net"
	"testing"
	"time"
)

// accept dials l and returns the server side of the new connection.
func accept(t *testing.T, l *Listener) (*Conn, net.Conn) {
	t.Helper()
	client, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	return c.(*Conn), client
}

// closed reports whether the peer of client closed the connection
// within wait.
func closed(client net.Conn, wait time.Duration) bool {
	client.SetReadDeadline(time.Now().Add(wait))
	_, err := client.Read(make([]byte, 1))
	ne, ok := err.(net.Error)
	return err != nil && !(ok && ne.Timeout())
}

// A full listener closes its oldest connection not in a request for a
// new one, and the new one when every connection is in a request.
func TestEviction(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var n Counters
	l := NewListener(ln, 2, &n)
	first, firstClient := accept(t, l)
	second, secondClient := accept(t, l)
	first.Begin() // in a request: never evicted
	_, _ = accept(t, l)
	if n.Open.Load() != 2 || n.Evicted.Load() != 1 {
		t.Fatalf("open %d, evicted %d; want 2 and 1", n.Open.Load(), n.Evicted.Load())
	}
	if !closed(secondClient, 5*time.Second) {
		t.Fatal("the oldest idle connection was not closed")
	}
	if second.Close(); n.Open.Load() != 2 {
		t.Errorf("closing an evicted connection again: open %d; want 2", n.Open.Load())
	}
	if closed(firstClient, 100*time.Millisecond) {
		t.Fatal("the connection in a request was evicted")
	}
	first.End()
	first.Close()
	if n.Open.Load() != 1 {
		t.Errorf("after Close: open %d; want 1", n.Open.Load())
	}
}

func TestRefusedWhenAllBusy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var n Counters
	l := NewListener(ln, 1, &n)
	busy, _ := accept(t, l)
	busy.Begin()
	refused, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer refused.Close()
	go func() {
		// Accept closes the refused connection, then waits for the next.
		if c, err := l.Accept(); err == nil {
			c.Close()
		}
	}()
	if !closed(refused, 5*time.Second) {
		t.Fatal("the new connection was not closed")
	}
	// Accept counts the refusal just after closing the connection.
	for deadline := time.Now().Add(5 * time.Second); n.Refused.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if n.Refused.Load() != 1 || n.Open.Load() != 1 {
		t.Errorf("refused %d, open %d; want the new connection closed, 1 and 1", n.Refused.Load(), n.Open.Load())
	}
}

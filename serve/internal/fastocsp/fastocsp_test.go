package fastocsp

import (
	"io"
	"net"
	"testing"
	"time"

	"minica/serve/internal/connlimit"
)

// The dedicated listener's connections are those of its connlimit.Listener:
// the handler finds the connlimit.Conn under each to mark it busy, bytes pass
// both ways (a read after a write yields first), and Close gives the slot
// back.
func TestListenerConns(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var n connlimit.Counters
	lim := connlimit.NewListener(ln, 4, &n)
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	c, err := Listener(lim).Accept()
	if err != nil {
		t.Fatal(err)
	}
	tc := trackedOf(c)
	if tc == nil || n.Open.Load() != 1 {
		t.Fatalf("trackedOf(%T) = %v, %d connections; want the connlimit.Listener's one", c, tc, n.Open.Load())
	}
	if trackedOf(client) != nil {
		t.Errorf("trackedOf(a plain connection) is not nil")
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	client.SetDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 16)
	for _, msg := range []string{"first", "second"} {
		io.WriteString(client, msg)
		if n, err := io.ReadAtLeast(c, buf, len(msg)); err != nil || string(buf[:n]) != msg {
			t.Fatalf("server read %q, %v; want %q", buf[:n], err, msg)
		}
		if _, err := io.WriteString(c, "answer "+msg); err != nil {
			t.Fatal(err)
		}
		if n, err := io.ReadAtLeast(client, buf, len("answer "+msg)); err != nil || string(buf[:n]) != "answer "+msg {
			t.Fatalf("client read %q, %v", buf[:n], err)
		}
	}
	c.Close()
	if n.Open.Load() != 0 {
		t.Errorf("after Close: %d counted; want none", n.Open.Load())
	}
}

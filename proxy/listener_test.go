package proxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// errListener fails Accept with errs in turn, then with net.ErrClosed.
type errListener struct {
	net.Listener
	errs chan error
}

func (l *errListener) Accept() (net.Conn, error) {
	select {
	case err := <-l.errs:
		return nil, err
	default:
		return nil, net.ErrClosed
	}
}

func (l *errListener) Close() error { return nil }

func TestAcceptErrorsAreRetried(t *testing.T) {
	log := &syncBuffer{}
	p := &Proxy{cfg: Config{MaxConns: 1}, log: &logger{w: log}, metrics: newMetrics()}
	errs := make(chan error, 2)
	errs <- errors.New("accept4: too many open files")
	errs <- errors.New("accept4: software caused connection abort")
	tl := newTLSListener(&errListener{errs: errs}, p)
	if _, err := tl.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept() error = %v; want net.ErrClosed", err)
	}
	if n := strings.Count(log.String(), "accept-error"); n != 2 {
		t.Errorf("%d accept-error lines; want 2:\n%s", n, log.String())
	}
}

func TestSourceOf(t *testing.T) {
	tests := []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 1}, "192.0.2.7/32"},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:192.0.2.7"), Port: 1}, "192.0.2.7/32"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:3:4:5:6"), Port: 1}, "2001:db8:1:2::/64"},
		{&net.UnixAddr{Name: "/run/proxy.sock", Net: "unix"}, "invalid Prefix"},
	}
	for _, tt := range tests {
		if got := sourceOf(tt.addr).String(); got != tt.want {
			t.Errorf("sourceOf(%v) = %s; want %s", tt.addr, got, tt.want)
		}
	}
}

func TestIsTimeout(t *testing.T) {
	deadline := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"a deadline's OpError", deadline, true},
		{"the deadline error itself", os.ErrDeadlineExceeded, true},
		{"a wrapped deadline", fmt.Errorf("tls: %w", deadline), true},
		{"a reset", reset, false},
		{"a wrapped reset", fmt.Errorf("tls: %w", reset), false},
		{"EOF", io.EOF, false},
		{"no error", nil, false},
	} {
		if got := isTimeout(c.err); got != c.want {
			t.Errorf("isTimeout(%s: %v) = %v; want %v", c.name, c.err, got, c.want)
		}
	}
}

// TestClientConnWriteDeadline checks the write deadline of a client
// connection as net/http and crypto/tls use it: cleared between writes it
// cuts no later write, set earlier during a blocked write it ends the
// write at once, and cleared during a blocked write it lets the write go
// on.
func TestClientConnWriteDeadline(t *testing.T) {
	const writeTimeout = 10 * time.Second
	pair := func(t *testing.T) (*clientConn, net.Conn) {
		a, b := net.Pipe()
		t.Cleanup(func() { a.Close(); b.Close() })
		return &clientConn{lazyConn: newLazyConn(a), writeTimeout: writeTimeout}, b
	}
	readAll := func(b net.Conn, n int) <-chan error {
		done := make(chan error, 1)
		go func() {
			_, err := io.ReadFull(b, make([]byte, n))
			done <- err
		}()
		return done
	}
	write := func(c *clientConn, n int) <-chan error {
		done := make(chan error, 1)
		go func() {
			_, err := c.Write(make([]byte, n))
			done <- err
		}()
		return done
	}
	wait := func(t *testing.T, what string, ch <-chan error) error {
		t.Helper()
		select {
		case err := <-ch:
			return err
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: still blocked after 5s", what)
			return nil
		}
	}

	t.Run("cleared between writes", func(t *testing.T) {
		c, b := pair(t)
		if err := c.SetWriteDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		r := readAll(b, 2)
		if err := wait(t, "first write", write(c, 1)); err != nil {
			t.Fatalf("write before the deadline: %v", err)
		}
		if err := c.SetWriteDeadline(time.Time{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond) // the first deadline passes
		if err := wait(t, "second write", write(c, 1)); err != nil {
			t.Fatalf("write after the deadline was cleared: %v; want none", err)
		}
		if err := wait(t, "reader", r); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("earlier during a blocked write", func(t *testing.T) {
		c, _ := pair(t) // nobody reads
		w := write(c, 1)
		time.Sleep(50 * time.Millisecond)
		if err := c.SetWriteDeadline(time.Now()); err != nil {
			t.Fatal(err)
		}
		if err := wait(t, "write past its deadline", w); !isTimeout(err) {
			t.Fatalf("blocked write after an earlier deadline: %v; want a timeout", err)
		}
	})
	t.Run("cleared during a blocked write", func(t *testing.T) {
		c, b := pair(t)
		if err := c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		w := write(c, 1)
		time.Sleep(20 * time.Millisecond)
		if err := c.SetWriteDeadline(time.Time{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond) // past the cleared deadline
		r := readAll(b, 1)
		if err := wait(t, "write", w); err != nil {
			t.Fatalf("write whose deadline was cleared: %v; want none", err)
		}
		if err := wait(t, "reader", r); err != nil {
			t.Fatal(err)
		}
	})
}

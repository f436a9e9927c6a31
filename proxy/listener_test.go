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
	"testing/synctest"
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
		return &clientConn{Conn: a, writeTimeout: writeTimeout}, b
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

// TestClientConnWriteTimeout checks the cut of a client that stops
// reading, in a bubble of fake time: a write it has not taken whole
// WriteTimeout after the write's start ends the connection, though it
// takes some bytes now and then (as a client's kernel does for a while
// after its reader stopped): at WriteTimeout, not WriteTimeout after the
// last byte taken. Writes after the cut (crypto/tls's close_notify alert)
// fail at once. A client that takes each write within WriteTimeout,
// however slowly, is not cut.
func TestClientConnWriteTimeout(t *testing.T) {
	const writeTimeout = 10 * time.Second
	const record = 16 << 10 // crypto/tls writes a record at a time
	type take struct {
		bytes int
		pause time.Duration // after taking bytes
	}
	tests := []struct {
		name    string
		takes   []take // in turn; the last one again and again when loop
		loop    bool
		records int
		cutAt   time.Duration // after the first write's start; 0: never
	}{
		{name: "trickling", takes: []take{{1 << 10, 3 * time.Second}}, loop: true, records: 1, cutAt: writeTimeout},
		{name: "a record in time, then nothing", records: 2, cutAt: 8*time.Second + writeTimeout,
			takes: []take{{8 << 10, 8 * time.Second}, {8 << 10, 0}}},
		{name: "each record in time", takes: []take{{4 << 10, 2 * time.Second}}, loop: true, records: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a, b := net.Pipe()
				c := &clientConn{Conn: a, writeTimeout: writeTimeout}
				stop := make(chan struct{})
				go func() {
					for i := 0; i < len(tt.takes) || tt.loop; i++ {
						tk := tt.takes[min(i, len(tt.takes)-1)]
						if _, err := io.ReadFull(b, make([]byte, tk.bytes)); err != nil {
							return
						}
						select {
						case <-time.After(tk.pause):
						case <-stop:
							return
						}
					}
				}()
				defer b.Close()
				defer close(stop)
				start := time.Now()
				var err error
				for i := 0; i < tt.records && err == nil; i++ {
					_, err = c.Write(make([]byte, record))
				}
				took := time.Since(start)
				if tt.cutAt == 0 {
					if err != nil || c.writeTimedOut() {
						t.Fatalf("after %v: %v, writeTimedOut() = %v; want no cut", took, err, c.writeTimedOut())
					}
					return
				}
				if !isTimeout(err) || !c.writeTimedOut() || took != tt.cutAt {
					t.Fatalf("after %v: %v, writeTimedOut() = %v; want a timeout after %v", took, err, c.writeTimedOut(), tt.cutAt)
				}
				start = time.Now()
				if _, err := c.Write([]byte("close_notify")); !isTimeout(err) || time.Since(start) != 0 {
					t.Errorf("Write after the cut: %v after %v; want the timeout at once", err, time.Since(start))
				}
			})
		})
	}
}

package proxy

import (
	"errors"
	"net"
	"strings"
	"testing"
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

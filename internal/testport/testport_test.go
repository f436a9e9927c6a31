package testport

import (
	"net"
	"strconv"
	"testing"
)

func TestFreeCanBeListenedOn(t *testing.T) {
	p := Free(t)
	if p <= 0 || p > 65535 {
		t.Fatalf("Free() = %d; want a TCP port", p)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
	if err != nil {
		t.Fatalf("listening on the port Free returned: %v", err)
	}
	ln.Close()
}

//go:build unix

package proxy

import (
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestWaitWritable checks the rule by which a write that waits for its
// client goes on: over TCP the system reports the socket writable once a
// good part of its send buffer is free, not when a few KiB are, which is
// all a client's kernel frees after its reader stopped.
//
// Both buffers are set, which stops the kernel's autotuning of them: else a
// send buffer that grows, or a receive window that opens wide, frees more
// than the client took, at a time that depends on the machine's load. The
// client's receive buffer is set small beside the send buffer, of which a
// third must be free: what the client took and what it holds or has in
// flight cannot free that much.
func TestWaitWritable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	// The kernel doubles both, for its own overhead: 416 and 64 KiB. 208 KiB
	// is Linux's default limit of SO_SNDBUF (net.core.wmem_max). A smaller
	// receive buffer makes the kernel drop loopback's large segments, and
	// the draining below wait for retransmissions.
	if err := server.(*net.TCPConn).SetWriteBuffer(208 << 10); err != nil {
		t.Fatal(err)
	}
	if err := client.(*net.TCPConn).SetReadBuffer(32 << 10); err != nil {
		t.Fatal(err)
	}
	// Fill the send buffer until the kernel refuses a write (EAGAIN): a
	// nonblocking write asks the socket itself, where a write with a
	// deadline would stop early when the test is not scheduled in time.
	rc, err := server.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for i := 0; ; i++ {
		if i == 2000 {
			t.Fatal("the socket took 128 MiB from a client that reads nothing")
		}
		var werr error
		if err := rc.Write(func(fd uintptr) bool {
			_, werr = unix.Write(int(fd), chunk)
			return true // one try, no wait
		}); err != nil {
			t.Fatal(err)
		}
		if werr == unix.EAGAIN {
			break
		}
		if werr != nil {
			t.Fatal(werr)
		}
	}
	if _, err := io.ReadFull(client, make([]byte, 16<<10)); err != nil {
		t.Fatal(err)
	}
	server.SetWriteDeadline(time.Now().Add(500 * time.Millisecond))
	if err := waitWritable(server); !isTimeout(err) {
		t.Fatalf("waitWritable once the client took 16 KiB of full buffers: %v; want the deadline's timeout", err)
	}
	go io.Copy(io.Discard, client)
	server.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if err := waitWritable(server); err != nil {
		t.Fatalf("waitWritable while the client reads all: %v; want nil", err)
	}
}

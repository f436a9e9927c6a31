//go:build unix

package proxy

import (
	"io"
	"net"
	"testing"
	"time"
)

// TestWaitWritable checks the rule by which a write that waits for its
// client goes on: over TCP the system reports the socket writable once a
// good part of its send buffer is free, not when a few KiB are, which is
// all a client's kernel frees after its reader stopped.
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
	// Fill both sides' buffers, until the kernels take no more.
	chunk := make([]byte, 64<<10)
	for i := 0; ; i++ {
		if i == 2000 {
			t.Fatal("the socket took 128 MiB from a client that reads nothing")
		}
		server.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		n, err := server.Write(chunk)
		if err != nil && !isTimeout(err) {
			t.Fatal(err)
		}
		if err != nil && n == 0 {
			break
		}
	}
	if _, err := io.ReadFull(client, make([]byte, 16<<10)); err != nil {
		t.Fatal(err)
	}
	server.SetWriteDeadline(time.Now().Add(300 * time.Millisecond))
	if err := waitWritable(server); !isTimeout(err) {
		t.Fatalf("waitWritable once the client took 16 KiB of full buffers: %v; want the deadline's timeout", err)
	}
	go io.Copy(io.Discard, client)
	server.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if err := waitWritable(server); err != nil {
		t.Fatalf("waitWritable while the client reads all: %v; want nil", err)
	}
}

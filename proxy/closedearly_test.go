package proxy

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// TestConnClosedBeforeHandshake checks that a connection closed before its
// client sent a byte (a browser's pre-connection, a health check's
// connect) is no refused handshake: no handshake-refused line and no
// handshake failure, only minica_proxy_connections_closed_early_total;
// while a client that sends no ClientHello but other bytes still is one.
func TestConnClosedBeforeHandshake(t *testing.T) {
	e := newEnv(t, nil)
	for range 2 {
		c, err := net.Dial("tcp", e.addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	e.waitMetric("minica_proxy_connections_closed_early_total", "2")
	e.waitMetric("minica_proxy_handshakes_in_progress", "0")
	if log := e.log.String(); strings.Contains(log, "handshake-refused") {
		t.Errorf("a connection closed before any byte was logged as a refusal:\n%s", log)
	}
	if m := e.metric(`minica_proxy_handshake_failures_total{reason="tls-error"}`); m != "" {
		t.Errorf("counted as a handshake failure: %s", m)
	}

	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	io.Copy(io.Discard, c)
	e.waitLog("handshake-refused", "reason=tls-error")
	e.waitMetric(`minica_proxy_handshake_failures_total{reason="tls-error"}`, "1")
	e.waitMetric("minica_proxy_connections_closed_early_total", "2")
}

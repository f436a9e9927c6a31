package proxy

import (
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"minica/identity"
)

// TestConnClosedBeforeHandshake checks that a connection its client
// closes without a word, before sending a byte (a TCP health check) or
// after its ClientHello (Chromium's unused pre-connections), is no
// refused handshake: no handshake-refused line, no handshake failure,
// only minica_proxy_connections_closed_early_total{stage}; while a client
// that sends no ClientHello but other bytes is still refused (tls-error).
func TestConnClosedBeforeHandshake(t *testing.T) {
	e := newEnv(t, nil)
	for range 2 {
		c, err := net.Dial("tcp", e.addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	e.waitMetric(`minica_proxy_connections_closed_early_total{stage="before-hello"}`, "2")

	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(clientHello(t)); err != nil {
		t.Fatal(err)
	}
	// Take the server's whole flight (it then waits for the client's), so
	// that Close ends the connection with a FIN, not a reset.
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err != nil {
		t.Fatalf("the server sent no flight after the ClientHello: %v", err)
	}
	for {
		c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		if _, err := c.Read(make([]byte, 64<<10)); err != nil {
			break
		}
	}
	c.Close()
	e.waitMetric(`minica_proxy_connections_closed_early_total{stage="in-handshake"}`, "1")
	e.waitMetric("minica_proxy_handshakes_in_progress", "0")
	if log := e.log.String(); strings.Contains(log, "handshake-refused") {
		t.Errorf("a connection closed without a word was logged as a refusal:\n%s", log)
	}
	if m := e.metric(`minica_proxy_handshake_failures_total{reason="tls-error"}`); m != "" {
		t.Errorf("counted as a handshake failure: %s", m)
	}

	c, err = net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	io.Copy(io.Discard, c)
	e.waitLog("handshake-refused", "reason=tls-error")
	e.waitMetric(`minica_proxy_handshake_failures_total{reason="tls-error"}`, "1")
	e.waitMetric(`minica_proxy_connections_closed_early_total{stage="before-hello"}`, "2")
}

// clientHello returns the first record crypto/tls's client sends: a
// ClientHello for localhost.
func clientHello(t *testing.T) []byte {
	t.Helper()
	client, server := net.Pipe()
	defer server.Close()
	go func() {
		tls.Client(client, &tls.Config{ServerName: "localhost", MinVersion: tls.VersionTLS12}).Handshake()
		client.Close()
	}()
	head := make([]byte, 5)
	if _, err := io.ReadFull(server, head); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, binary.BigEndian.Uint16(head[3:]))
	if _, err := io.ReadFull(server, body); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	return append(head, body...)
}

// TestRefusedClientClosingEarly checks that a client the proxy refuses
// stays a refusal with its real reason when it closes at once after its
// handshake, without reading the proxy's alert (in TLS 1.3 the client's
// handshake ends before the server verified its certificate), whether it
// closes with a FIN or a reset: the proxy reads the certificate the
// client sent before it closed, and refuses it. Only a client that
// closes before the proxy saw a certificate to decide on is closed early.
func TestRefusedClientClosingEarly(t *testing.T) {
	e := newEnv(t, nil)
	revoked, key := e.ca.Client(t, "revoked")
	e.setCRL(e.makeCRL(revoked.SerialNumber))
	if err := e.p.Reload(); err != nil {
		t.Fatal(err)
	}
	cfg := e.tlsConfig(revoked, key)
	cfg.MinVersion = tls.VersionTLS13
	for _, reset := range []bool{false, true} {
		raw, err := net.Dial("tcp", e.addr)
		if err != nil {
			t.Fatal(err)
		}
		c := tls.Client(raw, cfg)
		if err := c.Handshake(); err != nil {
			t.Fatalf("the client's side of the handshake: %v", err)
		}
		if reset {
			raw.(*net.TCPConn).SetLinger(0)
		}
		raw.Close()
	}
	e.waitMetric(`minica_proxy_handshake_failures_total{reason="revoked"}`, "2")
	e.waitLog("handshake-refused ", "reason=revoked ", "serial="+identity.SerialHex(revoked.SerialNumber))
	if m := e.metric(`minica_proxy_connections_closed_early_total{stage="in-handshake"}`); m != "" {
		t.Errorf("a refused client was counted as closed early: %s", m)
	}
}

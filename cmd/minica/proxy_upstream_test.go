package main

import (
	"net"
	"regexp"
	"strings"
	"testing"
)

// TestProxyProcessWarnsOfAnUpstreamDown checks that `minica proxy` whose
// upstream accepts no connection at start warns on stderr, naming the
// upstream and the cause, and serves all the same (apps often start after
// their proxy); with its upstream up it warns of nothing.
func TestProxyProcessWarnsOfAnUpstreamDown(t *testing.T) {
	t.Parallel()
	f := newProxyFixture(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close()
	args := []string{"proxy", "--listen", "127.0.0.1:0", "--upstream", down, "--server-cert", "app"}
	listening := regexp.MustCompile(`^minica proxy: listening on (127\.0\.0\.1:\d+), forwarding to `)
	_, stderr, _, _ := startListening(t, f.dir, listening, args...)
	p := &proxyProc{stderr: stderr}
	p.waitLog(t, "minica: warning: upstream "+down+" does not accept connections: nothing listens there", "connection refused")

	up := f.startProxy(t)
	alice := f.client(t, "alice")
	if status, _, _, _, err := get(alice, "https://"+up.addr+"/"); err != nil || status != 200 {
		t.Fatalf("GET through the proxy: %d %v", status, err)
	}
	if s := up.stderr.String(); strings.Contains(s, "warning: upstream") {
		t.Errorf("with its upstream up, the proxy warned:\n%s", s)
	}
}

//go:build interop

package servertest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// frontEnd is one server that `minica config` writes for.
type frontEnd struct {
	name string // the `minica config` subcommand
	// sanEmail: the server reads the email SAN, not only the subject's
	// emailAddress.
	sanEmail bool
	// start runs the server with the generated file, in dir.
	start func(t *testing.T, dir, generated, port string) *server
	// reload makes the running server read the republished CRL, as the
	// generated file's comments prescribe.
	reload func(t *testing.T, dir string, s *server, crlFile string)
	// reloadCommand is a shell command that makes the running server read
	// its files again, for the --exec of a CRL fetch job.
	reloadCommand func(dir string, s *server) string
}

// testFrontEnd runs a front end with the configuration `minica config`
// prints, unchanged, and checks who gets through and what the upstream sees.
func testFrontEnd(t *testing.T, fe frontEnd) {
	curl := need(t, "curl", "curl")
	p := newPKI(t)
	up := newUpstream(t)
	port := freePort(t)
	dir := t.TempDir()
	conf := minica(t, p.dir, "config", fe.name, "--server-cert", "web", "--upstream", up.url, "--listen", "127.0.0.1:"+port)
	generated := filepath.Join(dir, "generated.conf")
	if err := os.WriteFile(generated, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	s := fe.start(t, dir, generated, port)

	fetch := func(c client, extra ...string) response { return get(t, curl, p.caFile, port, c, extra...) }
	wantIdentity := func(t *testing.T, r response, name string, c client) {
		t.Helper()
		if !r.ok || r.status != "200" {
			t.Fatalf("%s: got status %q (%s); want 200\n%s", name, r.status, r.detail, s.output())
		}
		want := map[string]string{
			"X-Ssl-Client-Cn":     name,
			"X-Ssl-Client-Email":  name + "@example.com",
			"X-Ssl-Client-Verify": "SUCCESS",
		}
		for h, v := range want {
			if got := r.headers.Values(h); len(got) != 1 || got[0] != v {
				t.Errorf("%s: upstream got %s %q; want %q", name, h, got, v)
			}
		}
		if got := r.headers.Get("X-Ssl-Client-Dn"); !strings.Contains(got, "CN="+name) || !strings.Contains(got, "emailAddress="+name+"@example.com") {
			t.Errorf("%s: upstream got X-SSL-Client-DN %q; want the subject DN", name, got)
		}
		if got, want := trimSerial(r.headers.Get("X-Ssl-Client-Serial")), trimSerial(c.serial); got != want {
			t.Errorf("%s: upstream got X-SSL-Client-Serial %q; want %q", name, got, want)
		}
	}
	wantRefused := func(t *testing.T, what string, c client) {
		t.Helper()
		before := up.requests.Load()
		if r := fetch(c); !refused(r) {
			t.Errorf("%s: got status %s; want refused", what, r.status)
		}
		if n := up.requests.Load() - before; n != 0 {
			t.Errorf("%s: %d request(s) reached the upstream; want none", what, n)
		}
	}

	t.Run("valid", func(t *testing.T) { wantIdentity(t, fetch(p.alice), "alice", p.alice) })
	t.Run("spoofed headers", func(t *testing.T) {
		r := fetch(p.alice,
			"X-SSL-Client-CN: mallory", "X_SSL_Client_CN: mallory", "x-ssl-client-email: mallory@example.com",
			"X_SSL_CLIENT_EMAIL: mallory@example.com", "X-SSL-Client-Fingerprint: mallory", "X_SSL_Client_Cert: mallory")
		wantIdentity(t, r, "alice", p.alice)
		for h, vs := range r.headers {
			for _, v := range vs {
				if strings.Contains(v, "mallory") {
					t.Errorf("the client's %s: %q reached the upstream", h, v)
				}
			}
		}
	})
	t.Run("email in the SAN only", func(t *testing.T) {
		r := fetch(p.carol)
		if r.status != "200" {
			t.Fatalf("carol: got status %q (%s); want 200", r.status, r.detail)
		}
		want := ""
		if fe.sanEmail {
			want = "carol@example.com"
		}
		if got := r.headers.Get("X-Ssl-Client-Email"); got != want {
			t.Errorf("carol: upstream got X-SSL-Client-Email %q; want %q", got, want)
		}
		if got := r.headers.Get("X-Ssl-Client-Cn"); got != "carol" {
			t.Errorf("carol: upstream got X-SSL-Client-CN %q; want carol", got)
		}
	})
	t.Run("no certificate", func(t *testing.T) { wantRefused(t, "no certificate", client{}) })
	t.Run("other CA", func(t *testing.T) { wantRefused(t, "a client of another CA", p.eve) })
	t.Run("revoked", func(t *testing.T) {
		wantIdentity(t, fetch(p.bob), "bob", p.bob)
		minica(t, p.dir, "revoke", "bob")
		fe.reload(t, dir, s, filepath.Join(p.dir, "crl.pem"))
		// A reload replaces the server's workers gracefully: until the old
		// ones stop accepting, some connections still reach them. Wait for
		// three refusals in a row.
		deadline := time.Now().Add(waitLimit)
		for inARow := 0; inARow < 3; {
			inARow++
			if !refused(fetch(p.bob)) {
				inARow = 0
			}
			if time.Now().After(deadline) {
				t.Fatalf("bob was still let through %s after the revocation and the reload\n%s", waitLimit, s.output())
			}
			time.Sleep(200 * time.Millisecond)
		}
		wantRefused(t, "a revoked client", p.bob)
		wantIdentity(t, fetch(p.alice), "alice", p.alice)
	})
	if fe.name == "nginx" || fe.name == "apache" {
		t.Run("classic header names and a renewal", func(t *testing.T) { testClassicHeaders(t, fe) })
	}
}

// trimSerial compares serials as numbers: lowercase, no leading zeros or colons.
func trimSerial(s string) string {
	return strings.TrimLeft(strings.ToLower(strings.ReplaceAll(s, ":", "")), "0")
}

//go:build interop

package browsertest

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// artifactDir returns where screenshots go: $MINICA_BROWSER_ARTIFACTS, or a
// new temporary directory that outlives the test.
func artifactDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("MINICA_BROWSER_ARTIFACTS")
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "minica-browser-"); err != nil {
			t.Fatal(err)
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s (set MINICA_BROWSER_ARTIFACTS to choose)", dir)
	return dir
}

// refusedAlice matches the proxy's log line of a handshake refused to
// alice because she is revoked.
var refusedAlice = regexp.MustCompile(`handshake-refused remote=\S+ reason=revoked cn=alice `)

// TestChromiumThroughProxy logs in with a client certificate from a .p12 of
// each profile in headless Chromium, through `minica proxy`, and checks the
// identity the application rendered; then revokes one certificate and
// checks that the same browser no longer gets the page.
func TestChromiumThroughProxy(t *testing.T) {
	bed := newBed(t, "minica browser test CA")
	m, work, shots, caCN := bed.m, bed.work, bed.shots, bed.caCN

	users := []struct{ name, email, profile string }{
		{"alice", "alice@example.com", "modern"},
		{"bob", "bob@example.com", "compat"},
	}
	homes := map[string]string{}
	ids := map[string]issued{}
	for _, u := range users {
		p12, pw, id := m.issueClient(t, work, u.name, u.email, u.profile)
		homes[u.name] = newNSSHome(t, bed.caCert, p12, pw, u.name)
		ids[u.name] = id
	}

	app, upstreamSrv := startUpstream(t)
	px := m.startProxy(t, "localhost", upstreamSrv.URL, ids["bob"])
	origin := fmt.Sprintf("https://127.0.0.1:%d", px.port)
	installPolicy(t, caCN, origin)

	for _, u := range users {
		t.Run(u.profile, func(t *testing.T) {
			before := app.count(u.name)
			dom := dumpDOM(t, homes[u.name], origin+"/")
			for _, want := range []string{"CN: " + u.name, "email: " + u.email} {
				if !strings.Contains(dom, want) {
					t.Errorf("page rendered for %s (%s .p12) lacks %q:\n%s", u.name, u.profile, want, dom)
				}
			}
			if app.count(u.name) == before {
				t.Errorf("the upstream got no request from %s", u.name)
			}
			screenshot(t, homes[u.name], origin+"/", shots, u.name+"-"+u.profile)
		})
	}

	// Chromium's unused pre-connections, closed before their first byte,
	// are no refused handshakes (issue 31): an alert on the line stays quiet.
	if l := closedEarlyRefusal.FindString(px.log.String()); l != "" {
		t.Errorf("a connection closed before its handshake was logged as refused: %s", l)
	}

	t.Run("revoked", func(t *testing.T) {
		m.run(t, work, "revoke", "alice", "--reason", "keyCompromise")
		px.reloadUntilRefused(t, m.dir, ids["alice"])
		before, refusedBefore := app.count("alice"), len(refusedAlice.FindAllString(px.log.String(), -1))
		dom := dumpDOM(t, homes["alice"], origin+"/")
		if strings.Contains(dom, "Logged in") || strings.Contains(dom, "alice@example.com") {
			t.Errorf("Chromium got the page with a revoked certificate:\n%s", dom)
		}
		if got := app.count("alice"); got != before {
			t.Errorf("the upstream got %d requests from revoked alice; want none", got-before)
		}
		// Chromium did present the certificate, and the proxy refused it
		// as revoked (not, say, for want of a certificate).
		if len(refusedAlice.FindAllString(px.log.String(), -1)) == refusedBefore {
			t.Errorf("the proxy logged no %q line for Chromium's attempt; log:\n%s", refusedAlice, px.log)
		}
		if strings.Contains(dumpDOM(t, homes["bob"], origin+"/"), "CN: bob") == false {
			t.Errorf("bob, not revoked, no longer gets the page after alice's revocation")
		}
	})
}

// closedEarlyRefusal matches a refused handshake of a connection closed
// before its first byte, as the proxy logged Chromium's pre-connections.
var closedEarlyRefusal = regexp.MustCompile(`handshake-refused .*reason=tls-error error=EOF`)

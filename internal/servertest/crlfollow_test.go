//go:build interop

package servertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minica/crlsource"
)

// TestProxyFollowsNginxCRL runs `minica proxy --crl URL` against nginx
// serving the CA's crl.der as a static file: nginx has no long poll, so the
// proxy polls with conditional GETs, which nginx answers with 304 until the
// file changes; a revocation copied there is in force within about
// --crl-refresh (issue 14, point 7).
func TestProxyFollowsNginxCRL(t *testing.T) {
	nginx := need(t, "nginx", "nginx")
	curl := need(t, "curl", "curl")
	p := newPKI(t)
	dir := t.TempDir()
	// nginx's workers (nobody, when run as root) must reach the files.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	www := filepath.Join(dir, "www")
	if err := os.Mkdir(www, 0o755); err != nil {
		t.Fatal(err)
	}
	publish := func() {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(p.dir, "crl.der"))
		if err != nil {
			t.Fatal(err)
		}
		// As a deployment would: a new file renamed over the old one.
		tmp := filepath.Join(www, ".crl.der.tmp")
		if err := os.WriteFile(tmp, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(www, "crl.der")); err != nil {
			t.Fatal(err)
		}
	}
	publish()
	port := freePort(t)
	conf := fmt.Sprintf(`daemon off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log stderr notice;
events { worker_connections 64; }
http {
    types { application/pkix-crl crl der; }
    log_format st '$request $status';
    access_log %[1]s/access.log st;
    client_body_temp_path %[1]s/body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    server {
        listen 127.0.0.1:%[2]s;
        root %[3]s;
    }
}
`, dir, port, www)
	writeFile(t, filepath.Join(dir, "nginx.conf"), conf)
	start(t, port, nginx, "-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", filepath.Join(dir, "nginx.conf"))
	url := "http://127.0.0.1:" + port + "/crl.der"

	// nginx and the conditional GETs of crlsource: a 304 once the client
	// holds the file and nginx's own ETag; nginx wants every condition
	// sent to match, so the sha256 tag alone gets the file again.
	h := &crlsource.HTTP{URL: url}
	ctx := context.Background()
	first, err := h.Fetch(ctx, crlsource.Held{}, 0)
	if err != nil || first.NotModified || len(first.Data) == 0 || first.ETag == "" || first.LastModified.IsZero() {
		t.Fatalf("first GET = %+v, %v; want 200 with the CRL, an ETag and Last-Modified", first, err)
	}
	held := crlsource.Held{Data: first.Data, ETag: first.ETag, LastModified: first.LastModified}
	if r, err := h.Fetch(ctx, held, 10*time.Second); err != nil || !r.NotModified || r.WaitApplied {
		t.Fatalf("conditional GET = %+v, %v; want 304 at once, without Preference-Applied", r, err)
	}
	if r, err := h.Fetch(ctx, crlsource.Held{Data: first.Data, LastModified: first.LastModified}, 0); err != nil || r.NotModified {
		t.Fatalf("GET with the sha256 tag only = %+v, %v; want 200 (nginx's ETag differs)", r, err)
	}

	up := newUpstream(t)
	proxyPort := freePort(t)
	cache := filepath.Join(dir, "crl.cache")
	proxy := start(t, proxyPort, minicaBin, "--dir", p.dir, "proxy", "--listen", "127.0.0.1:"+proxyPort, "--upstream", up.url,
		"--server-cert", "web", "--ca", filepath.Join(p.dir, "ca.crt"), "--crl", url, "--crl-refresh", "300ms", "--crl-cache", cache)
	for _, c := range []client{p.alice, p.bob} {
		if r := get(t, curl, p.caFile, proxyPort, c); refused(r) {
			t.Fatalf("before the revocation: %s refused: %s %s", c.cert, r.status, r.detail)
		}
	}
	minica(t, p.dir, "revoke", "bob")
	publish()
	deadline := time.Now().Add(waitLimit)
	for !refused(get(t, curl, p.caFile, proxyPort, p.bob)) {
		if time.Now().After(deadline) {
			t.Fatalf("bob still let through %s after his revocation reached nginx\n%s", waitLimit, proxy.output())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r := get(t, curl, p.caFile, proxyPort, p.alice); refused(r) {
		t.Errorf("after the revocation: alice refused: %s %s", r.status, r.detail)
	}
	// Let a few more polls go out, then read nginx's log: the polls of an
	// unchanged file got 304.
	time.Sleep(time.Second)
	log, err := os.ReadFile(filepath.Join(dir, "access.log"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(log), "GET /crl.der HTTP/1.1 304"); n < 2 {
		t.Errorf("%d polls answered 304; want the polls of an unchanged file to be; nginx's log:\n%s", n, log)
	}
	if strings.Contains(proxy.output(), "crl-fetch-failed") {
		t.Errorf("the proxy logged failed fetches:\n%s", proxy.output())
	}
	if data, err := os.ReadFile(cache); err != nil || len(data) == 0 {
		t.Errorf("no CRL cache written: %v", err)
	}
}

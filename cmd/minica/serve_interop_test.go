//go:build interop

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A plain HTTP client needs nothing of the push path: curl fetches the
// CRL, then gets 304 for its saved ETag and for a date after thisUpdate, and
// 200 again once a revocation published a new CRL.
func TestServeWithCurl(t *testing.T) {
	t.Parallel()
	curl := needTool(t, "curl", "curl")
	dir := newCADir(t)
	mustMinica(t, dir, "issue", "client", "simon")
	p := startServe(t, dir)
	work := t.TempDir()
	etag, crl := filepath.Join(work, "etag"), filepath.Join(work, "crl.der")
	fetch := func(args ...string) string {
		t.Helper()
		args = append([]string{"-sS", "-o", crl, "-w", "%{http_code}", "--etag-save", etag}, args...)
		out, err := exec.Command(curl, append(args, p.base+"/crl.der")...).Output()
		if err != nil {
			t.Fatalf("curl %s: %v", args, err)
		}
		return string(out)
	}
	if got := fetch(); got != "200" {
		t.Fatalf("curl = %s; want 200", got)
	}
	saved, err := os.ReadFile(etag)
	if err != nil || !strings.HasPrefix(string(saved), `"sha256:`) {
		t.Fatalf("curl saved the ETag %q, %v; want \"sha256:...\"", saved, err)
	}
	if got := fetch("--etag-compare", etag); got != "304" {
		t.Errorf("curl --etag-compare = %s; want 304", got)
	}
	if got := fetch("-z", crl); got != "304" { // If-Modified-Since: the file's time, after thisUpdate
		t.Errorf("curl -z = %s; want 304", got)
	}
	mustMinica(t, dir, "revoke", "simon")
	eventually(t, "curl seeing the new CRL", func() string {
		if got := fetch("--etag-compare", etag); got != "200" {
			return got
		}
		return ""
	})
}

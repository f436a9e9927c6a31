//go:build interop

package browsertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// policyDir is where Chromium on Linux reads its managed policies.
const policyDir = "/etc/chromium/policies/managed"

// The site and CA of the policy in docs/tutorial.md, which installPolicy
// replaces with the test's.
const (
	tutorialSite = "https://app.example.com:8443"
	tutorialCA   = "Acme Internal CA"
)

// tutorialPolicy returns the Chromium policy that docs/tutorial.md writes
// to acme-client-cert.json (its heredoc), so that the browser tests prove
// the tutorial's words.
func tutorialPolicy(t *testing.T) []byte {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "tutorial.md"))
	if err != nil {
		t.Fatal(err)
	}
	const open = "cat > acme-client-cert.json <<'EOF'\n"
	_, rest, ok := strings.Cut(string(doc), open)
	body, _, closed := strings.Cut(rest, "\nEOF\n")
	if !ok || !closed {
		t.Fatalf("docs/tutorial.md has no block %q ... EOF", strings.TrimSpace(open))
	}
	return []byte(body)
}

// installPolicy writes a managed policy that makes Chromium present, without
// asking, a certificate issued by the CA named issuerCN to each of origins:
// the tutorial's policy, with its site and CA replaced by these (each rule
// once per origin). Chromium reads it when it starts. The file is removed
// when the test ends.
func installPolicy(t *testing.T, issuerCN string, origins ...string) {
	t.Helper()
	var doc map[string][]string
	if err := json.Unmarshal(tutorialPolicy(t), &doc); err != nil {
		t.Fatalf("the tutorial's Chromium policy is not JSON of string lists: %v", err)
	}
	rules := doc["AutoSelectCertificateForUrls"]
	if len(rules) == 0 {
		t.Fatal("the tutorial's Chromium policy has no AutoSelectCertificateForUrls rule")
	}
	var ours []string
	for _, r := range rules {
		var rule struct {
			Pattern string `json:"pattern"`
			Filter  struct {
				Issuer map[string]string `json:"ISSUER"`
			} `json:"filter"`
		}
		if err := json.Unmarshal([]byte(r), &rule); err != nil {
			t.Fatalf("the tutorial's rule %s is not JSON: %v", r, err)
		}
		if rule.Pattern != tutorialSite || rule.Filter.Issuer["CN"] != tutorialCA {
			t.Fatalf("the tutorial's rule %s is not for %s and %q", r, tutorialSite, tutorialCA)
		}
		for _, origin := range origins {
			rule.Pattern, rule.Filter.Issuer["CN"] = origin, issuerCN
			b, err := json.Marshal(rule)
			if err != nil {
				t.Fatal(err)
			}
			ours = append(ours, string(b))
		}
	}
	doc["AutoSelectCertificateForUrls"] = ours
	policy, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(policyDir, 0o755); err != nil {
		t.Fatalf("creating the Chromium policy directory: %v", err)
	}
	path := filepath.Join(policyDir, fmt.Sprintf("minica-browsertest-%d.json", os.Getpid()))
	if err := os.WriteFile(path, policy, 0o644); err != nil {
		t.Fatalf("writing the Chromium policy: %v", err)
	}
	t.Cleanup(func() {
		if err := os.Remove(path); err != nil {
			t.Errorf("removing the Chromium policy: %v", err)
		}
	})
}

// chromiumFlags are the flags of every run: headless, no sandbox (the test
// runs as root), and nothing that talks to the network besides the page.
var chromiumFlags = []string{
	"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
	"--no-first-run", "--disable-background-networking",
	"--disable-component-update", "--disable-sync",
}

// dumpDOM loads url in headless Chromium with the NSS database of home and
// a fresh profile, and returns the DOM after the load.
func dumpDOM(t *testing.T, home, url string) string {
	t.Helper()
	args := append(append([]string(nil), chromiumFlags...),
		"--user-data-dir="+t.TempDir(), "--dump-dom", url)
	out, err := runStdout([]string{"HOME=" + home}, "chromium", args...)
	if err != nil {
		t.Fatalf("chromium --dump-dom %s: %v", url, err)
	}
	return out
}

// screenshot loads url like dumpDOM, saves a PNG of the page as
// dir/name.png, and returns it decoded.
func screenshot(t *testing.T, home, url, dir, name string) image.Image {
	t.Helper()
	path := filepath.Join(dir, name+".png")
	args := append(append([]string(nil), chromiumFlags...),
		"--user-data-dir="+t.TempDir(), "--window-size=800,480", "--screenshot="+path, url)
	if _, err := runStdout([]string{"HOME=" + home}, "chromium", args...); err != nil {
		t.Fatalf("chromium --screenshot %s: %v", url, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the screenshot: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("screenshot %s is not a PNG: %v", path, err)
	}
	t.Logf("screenshot: %s", path)
	return img
}

package tutorialtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeSignsOnce: docs/serve.md's security model says once, in one
// sentence, what serve signs with the CA key (an edit once left two
// versions of that sentence, one cut off by a blank line).
func TestServeSignsOnce(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "serve.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if n := strings.Count(text, "signs with the CA key only"); n != 1 {
		t.Errorf("docs/serve.md says %d times what serve signs with the CA key; want once", n)
	}
	_, model, _ := strings.Cut(text, "**What serve does on the CA host**")
	model, _, _ = strings.Cut(model, "\n\n")
	for _, want := range []string{"the CRL", "OCSP responder certificate", "/renew"} {
		if !strings.Contains(strings.Join(strings.Fields(model), " "), want) {
			t.Errorf("docs/serve.md's paragraph on what serve does on the CA host does not name %q", want)
		}
	}
}

package tutorialtest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The Windows releases that need the compat PKCS#12 profile, said the same
// way everywhere: they cannot read the modern profile's AES-256 PBES2
// (Windows 10 reads it from version 1709, Server from 2019; see
// formats.P12Compat and the enrollment page's choice by User-Agent).
const (
	compatDesktop = "Windows 8.1 and older"
	compatServer  = "Windows Server 2016 and older"
)

// olderWindows finds every "Windows ... older" cut-off a document states.
var olderWindows = regexp.MustCompile(`(?:old|older) Windows|Windows (?:Server )?[0-9.]+ (?:and|or) older|Windows before [^,.)]*`)

// TestCompatWindowsCutoff keeps the documents that say which Windows needs
// the compat bundle in agreement: each names both cut-offs, in the same
// words, and no other. The enrollment page's source counts as one: its
// file labels and its Windows steps say the same.
func TestCompatWindowsCutoff(t *testing.T) {
	for _, doc := range []string{"docs/formats.md", "docs/enrollment.md", "docs/tutorial.md", "docs/commands.md", "docs/openssl-recipe.md",
		"serve/enroll/page.go", "serve/enroll/bundle.go"} {
		data, err := os.ReadFile(filepath.Join("..", "..", doc))
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(strings.Fields(string(data)), " ")
		for _, want := range []string{compatDesktop, compatServer} {
			if !strings.Contains(text, want) {
				t.Errorf("%s does not say %q", doc, want)
			}
		}
		for _, got := range olderWindows.FindAllString(text, -1) {
			if got != compatDesktop && got != compatServer {
				t.Errorf("%s says %q; want %q and %q", doc, got, compatDesktop, compatServer)
			}
		}
	}
}

//go:build interop

package tutorialtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestHierarchyCeremony runs the commands of docs/hierarchy.md as written:
// the ceremony (root, the intermediate's CSR, the root's signature, the
// import, leaves), the root's CRL and what to do when an intermediate's key
// is compromised, in that order, with /media/usb/root a temporary directory
// and both machines sharing one working directory (the files that travel
// are simply there). The commands are the indented lines of those sections
// that start with minica or sha256sum (continuation lines joined); then the
// test imports the root's last CRL and checks that simon's certificate is
// refused as the section says.
func TestHierarchyCeremony(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatal("bash not found: install the Debian package bash")
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "hierarchy.md"))
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	for _, sec := range []struct{ from, to string }{
		{"## The ceremony", "### On one machine"},
		{"## The root's CRL", "## Rotating an intermediate"},
		{"## When an intermediate's key is compromised", "## Files"},
	} {
		c := indentedCommands(t, string(doc), sec.from, sec.to)
		if len(c) == 0 {
			t.Fatalf("docs/hierarchy.md: no commands between %q and %q", sec.from, sec.to)
		}
		cmds = append(cmds, c...)
	}
	bin, work, home := t.TempDir(), t.TempDir(), t.TempDir()
	build(t, "go", "build", "-o", filepath.Join(bin, "minica"), "minica/cmd/minica")
	usb := filepath.Join(work, "media", "usb")
	if err := os.MkdirAll(usb, 0o700); err != nil {
		t.Fatal(err)
	}
	script := "set -euo pipefail\n" + strings.ReplaceAll(strings.Join(cmds, "\n"), "/media/usb/", usb+"/") +
		"\nminica crl import-root root.crl\n" +
		"if minica verify simon; then echo 'simon still valid'; exit 1; fi\n"
	out, err := runScript(t, script, work, []string{
		"HOME=" + home,
		"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"MINICA_PASSWORD=ceremony CA password",
	})
	if err != nil {
		t.Fatalf("the commands of docs/hierarchy.md failed: %v\n--- script:\n%s\n--- output:\n%s", err, script, out)
	}
	for _, want := range []string{
		`created CA "Acme Root CA"`,
		`signed intermediate CA "Acme Issuing CA 1" as "int1"`,
		`intermediate CA "Acme Issuing CA 1" in ` + filepath.Join(home, ".minica") + ` is ready`,
		`issued client certificate "simon"`,
		`issued server certificate "www.example.com"`,
		`revoked int1 `,
		`invalid: revoked: CA "CN=Acme Issuing CA 1" on the path (serial `,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
	checkPrintedSums(t, out)
}

// sha256sumLine is a line sha256sum prints: the sum, two spaces, the file.
var sha256sumLine = regexp.MustCompile(`(?m)^([0-9a-f]{64})  (\S+)$`)

// checkPrintedSums holds docs/hierarchy.md's promise that minica prints the
// sums of the files it wrote and read: every sum that the ceremony's
// sha256sum commands print was printed by minica too (the CSR by init, the
// certificate by sign-intermediate, the root's CRL by crl --out).
func checkPrintedSums(t *testing.T, out string) {
	t.Helper()
	files := map[string]bool{}
	for _, m := range sha256sumLine.FindAllStringSubmatch(out, -1) {
		files[m[2]] = true
		if !regexp.MustCompile(`(?m)sha256 +` + m[1] + `\b`).MatchString(out) {
			t.Errorf("sha256sum prints %s for %s; minica printed no such sum", m[1], m[2])
		}
	}
	for _, f := range []string{"int1.csr", "int1.crt", "root.crl"} {
		if !files[f] {
			t.Errorf("the ceremony's sha256sum never summed %s", f)
		}
	}
	// The import prints the root CRL's sum as read too: the sum sha256sum
	// gives at the root (step 3) must be the one crl --out printed there.
	for _, m := range sha256sumLine.FindAllStringSubmatchIndex(out, -1) {
		if out[m[4]:m[5]] != "root.crl" {
			continue
		}
		wrote := crlCopySum.FindAllStringSubmatch(out[:m[0]], -1)
		if len(wrote) == 0 || wrote[len(wrote)-1][1] != out[m[2]:m[3]] {
			t.Errorf("sha256sum prints %s for root.crl; crl --out printed %v before it", out[m[2]:m[3]], wrote)
		}
		break
	}
}

// crlCopySum is the sum crl --out prints for the copy root.crl.
var crlCopySum = regexp.MustCompile(`(?m)^  copy root\.crl \(DER\), sha256 ([0-9a-f]{64})$`)

// indentedCommands returns the commands of the indented code lines of doc
// between the headings from and to that start with minica or sha256sum,
// each with its continuation lines joined.
func indentedCommands(t *testing.T, doc, from, to string) []string {
	t.Helper()
	i := strings.Index(doc, "\n"+from)
	j := strings.Index(doc, "\n"+to)
	if i < 0 || j < i {
		t.Fatalf("docs/hierarchy.md: no section %q before %q", from, to)
	}
	var cmds []string
	cont := false
	for _, line := range strings.Split(doc[i:j], "\n") {
		code := strings.TrimSpace(line)
		if cont {
			cmds[len(cmds)-1] += "\n" + code
			cont = strings.HasSuffix(code, `\`)
			continue
		}
		if !strings.HasPrefix(line, "    ") || !(strings.HasPrefix(code, "minica ") || strings.HasPrefix(code, "sha256sum ")) {
			continue
		}
		cmds = append(cmds, code)
		cont = strings.HasSuffix(code, `\`)
	}
	return cmds
}

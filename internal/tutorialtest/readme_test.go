//go:build interop

package tutorialtest

import (
	"fmt"
	"minica/internal/testport"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadme runs the README's commands under "Then:", its one sh block,
// as written: in a fresh directory that holds ./minica as scripts/build.sh
// leaves it, with a temporary HOME and no MINICA_ variable but the CA
// password (the block's init would otherwise ask for it on a terminal).
// Only the ports 8080 and 8443 become free ones.
func TestReadme(t *testing.T) {
	for _, name := range []string{"bash", "curl", "openssl"} {
		if _, err := exec.LookPath(name); err != nil {
			t.Fatalf("%s not found: %v", name, err)
		}
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := shellBlocks(string(doc))
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	if len(blocks) != 1 {
		t.Fatalf("README.md has %d sh blocks; want 1, the commands under \"Then:\"", len(blocks))
	}
	work, home := t.TempDir(), t.TempDir()
	build(t, "bash", filepath.Join("..", "..", "scripts", "build.sh"), filepath.Join(work, "minica"))

	script := "set -euo pipefail\n" + blocks[0]
	script = strings.NewReplacer("8080", fmt.Sprint(testport.Free(t)), "8443", fmt.Sprint(testport.Free(t))).Replace(script)
	out, err := runScript(t, script, work, []string{
		"HOME=" + home,
		"MINICA_PASSWORD=readme CA password",
	})
	if err != nil {
		t.Fatalf("the README's commands failed: %v\n--- output:\n%s", err, out)
	}
	for _, want := range []string{
		"created CA \"Acme Internal CA\" in " + filepath.Join(work, "demo-ca") + "\n",
		"issued server certificate \"web1\"\n",
		"issued client certificate \"simon\"\n",
		// The list example shows the certificates just issued, as JSON Lines.
		"\"name\":\"alice\",\"profile\":\"client\",\"status\":\"valid\",",
		"\"name\":\"web1\",\"profile\":\"server\",\"status\":\"valid\",",
		"wrote simon.p12: ",
		"\nX-Ssl-Client-Cn: simon\n",
		"\nX-Ssl-Client-Email: simon@example.com\n",
		"revoked simon ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the README's output lacks %q", want)
		}
	}
	if _, err := os.Stat(filepath.Join(home, ".minica")); err == nil {
		t.Errorf("the README's commands created ~/.minica")
	}
	if t.Failed() {
		t.Logf("the README's output:\n%s", out)
	}
}

// Package softhsm makes throw-away SoftHSM2 tokens for the tests of CA keys
// in PKCS#11 tokens: each token lives in a directory of its own, named by a
// configuration file that SOFTHSM2_CONF points to, so that no test touches
// the system's tokens (/var/lib/softhsm) or another test's.
package softhsm

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Label, PIN and SOPIN are those of every token New makes.
const (
	Label = "minica"
	PIN   = "1234"
	SOPIN = "5678"
)

// modules are where Debian's softhsm2 package puts its PKCS#11 library.
var modules = []string{
	"/usr/lib/softhsm/libsofthsm2.so",
	"/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so",
	"/usr/lib/aarch64-linux-gnu/softhsm/libsofthsm2.so",
}

// Token is an initialised SoftHSM2 token.
type Token struct {
	Conf     string // the configuration file, for SOFTHSM2_CONF
	TokenDir string // where SoftHSM2 keeps the token's objects
	Module   string // the PKCS#11 library
}

// Module returns the path of the SoftHSM2 PKCS#11 library, or an error
// naming the Debian package when it is not installed.
func Module() (string, error) {
	for _, m := range modules {
		if _, err := os.Stat(m); err == nil {
			return m, nil
		}
	}
	return "", errors.New("SoftHSM2 is required (Debian package softhsm2): no libsofthsm2.so in " + strings.Join(modules, ", "))
}

// New writes a SoftHSM2 configuration into dir, with its token directory
// beside it, and initialises a token labelled Label with PIN and SOPIN in
// it (softhsm2-util --init-token --free).
func New(dir string) (*Token, error) {
	module, err := Module()
	if err != nil {
		return nil, err
	}
	util, err := exec.LookPath("softhsm2-util")
	if err != nil {
		return nil, errors.New("softhsm2-util is required (Debian package softhsm2)")
	}
	t := &Token{Conf: filepath.Join(dir, "softhsm2.conf"), TokenDir: filepath.Join(dir, "tokens"), Module: module}
	if err := os.MkdirAll(t.TokenDir, 0o700); err != nil {
		return nil, err
	}
	conf := fmt.Sprintf("directories.tokendir = %s\nobjectstore.backend = file\nlog.level = ERROR\nslots.removable = false\n", t.TokenDir)
	if err := os.WriteFile(t.Conf, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(util, "--init-token", "--free", "--label", Label, "--pin", PIN, "--so-pin", SOPIN)
	cmd.Env = append(os.Environ(), "SOFTHSM2_CONF="+t.Conf)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("softhsm2-util --init-token: %v: %s", err, out)
	}
	return t, nil
}

// URI is the key URI of object in the token.
func (t *Token) URI(object string) string {
	return "pkcs11:token=" + Label + ";object=" + object + "?module-path=" + t.Module
}

//go:build interop && cgo && !nopkcs11

package main

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"maps"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ThalesGroup/crypto11"
	"github.com/rogpeppe/go-internal/testscript"

	"minica/internal/keyscan"
	"minica/internal/softhsm"
)

// TestPKCS11Scripts runs testdata/pkcs11/*.txtar, each with a SoftHSM2
// token of its own: $MODULE is its library, $URI the key URI of object
// "ca", pin.txt and wrong-pin.txt hold the right PIN and a wrong one.
func TestPKCS11Scripts(t *testing.T) {
	cmds := maps.Clone(scriptCommands)
	cmds["no-ca-key"] = cmdNoCAKey
	cmds["token-delete"] = cmdTokenDelete
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/pkcs11",
		RequireExplicitExec: true,
		UpdateScripts:       *update,
		Cmds:                cmds,
		Setup: func(env *testscript.Env) error {
			tok, err := softhsm.New(filepath.Join(env.WorkDir, "hsm"))
			if err != nil {
				return err
			}
			env.Setenv("MINICA_DIR", env.WorkDir+"/ca")
			env.Setenv("HOME", env.WorkDir+"/home")
			env.Setenv("SOFTHSM2_CONF", tok.Conf)
			env.Setenv("MODULE", tok.Module)
			env.Setenv("URI", tok.URI("ca"))
			if err := os.WriteFile(filepath.Join(env.WorkDir, "pin.txt"), []byte(softhsm.PIN+"\n"), 0o600); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(env.WorkDir, "wrong-pin.txt"), []byte("0000\n"), 0o600)
		},
	})
}

// no-ca-key CACERT DIR...: no file under the DIRs holds the private key of
// CACERT in any form keyscan knows (PEM, DER at any offset, the raw
// scalar or a prime factor), and no file but a *.key (a leaf's, another
// CA's) other than ca.key beside CACERT holds a PEM private key.
func cmdNoCAKey(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 || neg {
		ts.Fatalf("usage: no-ca-key CACERT DIR...")
	}
	data, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	block, _ := pem.Decode(data)
	if block == nil {
		ts.Fatalf("%s: no PEM block", args[0])
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	ts.Check(err)
	var roots []string
	for _, d := range args[1:] {
		roots = append(roots, ts.MkAbs(d))
	}
	caKey := filepath.Join(filepath.Dir(ts.MkAbs(args[0])), "ca.key")
	allow := func(file string) bool { return strings.HasSuffix(file, ".key") && file != caKey }
	found, st, err := keyscan.Scan(roots, cert.PublicKey, allow)
	ts.Check(err)
	for _, f := range found {
		ts.Logf("found: %s", f)
	}
	if len(found) > 0 {
		ts.Fatalf("private key material on disk")
	}
	ts.Logf("scanned %d files, %d bytes, %d PEM blocks, %d key-sized windows: no CA key", st.Files, st.Bytes, st.PEMBlocks, st.Windows)
}

// token-delete LABEL: deletes the key pairs labelled LABEL from the
// script's token, as an operator's mistake would.
func cmdTokenDelete(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 || neg {
		ts.Fatalf("usage: token-delete LABEL")
	}
	os.Setenv("SOFTHSM2_CONF", ts.Getenv("SOFTHSM2_CONF"))
	ctx, err := crypto11.Configure(&crypto11.Config{Path: ts.Getenv("MODULE"), TokenLabel: softhsm.Label, Pin: softhsm.PIN})
	ts.Check(err)
	defer ctx.Close()
	keys, err := ctx.FindKeyPairs(nil, []byte(args[0]))
	ts.Check(err)
	if len(keys) == 0 {
		ts.Fatalf("no key labelled %q", args[0])
	}
	for _, k := range keys {
		ts.Check(k.Delete())
	}
}

// TestServeWithTokenKey runs `minica serve` on a CA whose key is in a
// SoftHSM2 token: its OCSP responder certificate and responses are signed
// through the token, and openssl verifies them; a revocation made meanwhile
// by another process, through the same token, is answered.
func TestServeWithTokenKey(t *testing.T) {
	openssl := needTool(t, "openssl", "openssl")
	tok, err := softhsm.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SOFTHSM2_CONF", tok.Conf)
	t.Setenv("MINICA_PIN", softhsm.PIN)
	dir := filepath.Join(t.TempDir(), "ca")
	mustMinica(t, dir, "init", "--cn", "Token Root", "--key-uri", tok.URI("serve"), "--ocsp-url", "http://pki.example.com/status")
	mustMinica(t, dir, "issue", "client", "simon", "--email", "simon@example.com")
	simon := certFileOf(t, dir, "simon")
	caFile := filepath.Join(dir, "ca.crt")
	p := startServe(t, dir)
	ask := func() string {
		t.Helper()
		out, err := exec.Command(openssl, "ocsp", "-issuer", caFile, "-cert", simon, "-url", p.base, "-CAfile", caFile, "-timeout", "10").CombinedOutput()
		if err != nil {
			t.Fatalf("openssl ocsp: %v\n%s\nserve stderr: %s", err, out, p.stderr)
		}
		if !strings.Contains(string(out), "Response verify OK") {
			return "unverified: " + string(out)
		}
		return string(out)
	}
	if out := ask(); !strings.Contains(out, ": good\n") {
		t.Fatalf("simon: %s; want good", out)
	}
	mustMinica(t, dir, "revoke", "simon", "--reason", "keyCompromise")
	eventually(t, "simon revoked over OCSP", func() string {
		if out := ask(); !strings.Contains(out, ": revoked\n") {
			return out
		}
		return ""
	})
	ca, err := x509.ParseCertificate(pemBytes(t, caFile))
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "serve's CRL lists simon", func() string {
		_, body := p.fetch(t, "/crl.der")
		crl, err := x509.ParseRevocationList(body)
		if err != nil {
			return err.Error()
		}
		if err := crl.CheckSignatureFrom(ca); err != nil || len(crl.RevokedCertificateEntries) != 1 {
			return fmt.Sprintf("signature %v, %d entries", err, len(crl.RevokedCertificateEntries))
		}
		return ""
	})

	// Five days on, past the half-life of the 7-day CRL: a second serve
	// re-signs it through the token by itself, and signs OCSP responses
	// with the CA key itself (--ocsp-ca-key).
	before := crlNumberOf(t, filepath.Join(dir, "crl.der"))
	t.Setenv("MINICA_TEST_NOW", time.Now().Add(5*24*time.Hour).UTC().Format(time.RFC3339))
	p = startServe(t, dir, "--ocsp-ca-key")
	eventually(t, "serve re-signs the CRL", func() string {
		if n := crlNumberOf(t, filepath.Join(dir, "crl.der")); n.Cmp(before) <= 0 {
			return "CRL number " + n.String()
		}
		return ""
	})
	// openssl warns that the response, made five days ahead, is not yet
	// valid; its signature is what counts here.
	if out := ask(); !strings.Contains(out, "\nrevoked\n") && !strings.Contains(out, ": revoked\n") {
		t.Fatalf("simon with --ocsp-ca-key: %s; want revoked", out)
	}
}

func crlNumberOf(t *testing.T, file string) *big.Int {
	t.Helper()
	der, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	crl, err := x509.ParseRevocationList(der)
	if err != nil {
		t.Fatal(err)
	}
	return crl.Number
}

func pemBytes(t *testing.T, file string) []byte {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("%s: no PEM block", file)
	}
	return block.Bytes
}

// TestNoCgoBuildRefusesPKCS11 builds minica without cgo, as the release
// build does, and checks that a key URI gets the message that PKCS#11
// needs a cgo build, before any PIN is asked for and with nothing written.
func TestNoCgoBuildRefusesPKCS11(t *testing.T) {
	t.Parallel()
	goTool := needTool(t, "go", "golang")
	bin := filepath.Join(t.TempDir(), "minica-nocgo")
	build := exec.Command(goTool, "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build: %v\n%s", err, out)
	}
	dir := filepath.Join(t.TempDir(), "ca")
	cmd := exec.Command(bin, "--dir", dir, "init", "--cn", "X", "--key-uri", "pkcs11:token=minica;object=ca?module-path=/usr/lib/softhsm/libsofthsm2.so")
	cmd.Env = append(os.Environ(), "MINICA_PIN=")
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 {
		t.Fatalf("minica init --key-uri: %v; want exit 1\n%s", err, out)
	}
	want := "minica: error: the CA key is in PKCS#11 token \"minica\": PKCS#11 keys need a minica built with cgo; this binary was built without cgo\n" +
		"minica: hint: build minica with cgo (CGO_ENABLED=1 go build ./cmd/minica); see 'CA keys in an HSM' in docs/hierarchy.md\n"
	if !strings.HasPrefix(string(out), want) {
		t.Fatalf("output %q; want starting with %q", out, want)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the CA directory was created: %v", err)
	}
}

package main

import (
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A crl.der that holds the CRL as PEM with text around it is read alike
// by verify and the proxy (one reader, revoke.ParseCRLFile): both refuse
// the revoked client and accept the other, where verify used to say
// crl-missing while the proxy decided.
func TestVerifyAndProxyReadOneCRLFile(t *testing.T) {
	t.Parallel()
	f := newProxyFixture(t)
	mustMinica(t, f.dir, "revoke", "alice")
	file := filepath.Join(f.dir, "crl.der")
	der, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	text := "The CRL of Test Root, as pasted by hand\n" + string(pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: der})) + "-- end\n"
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if stdout, _, code := minica(t, f.dir, "verify", "alice"); code != 1 || !strings.HasPrefix(stdout, "invalid: revoked: ") {
		t.Errorf("verify alice: exit %d, %q; want 1 and invalid: revoked", code, stdout)
	}
	if stdout, _, code := minica(t, f.dir, "verify", "bob"); code != 0 || !strings.HasPrefix(stdout, "valid: ") {
		t.Errorf("verify bob: exit %d, %q; want 0 and valid", code, stdout)
	}
	p := f.startProxy(t)
	url := "https://" + p.addr + "/"
	if status, _, body, _, err := get(f.client(t, "bob"), url); err != nil || status != 200 {
		t.Errorf("GET as bob through the proxy: %d %q %v; want 200", status, body, err)
	}
	if _, _, _, _, err := get(f.client(t, "alice"), url); err == nil {
		t.Error("alice got through the proxy")
	}
	p.waitLog(t, "handshake-refused", "reason=revoked", "cn=alice")
}

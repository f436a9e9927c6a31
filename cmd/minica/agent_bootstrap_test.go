package main

import (
	"crypto/x509"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestAgentProcessBootstrap is a machine's first certificate without an
// operator on the machine: `minica token` on the CA host, the token
// carried as a file, `minica agent --token-file` against a real `minica
// serve` over HTTPS; then the certificate renews over mTLS, the token is
// good once, and the certificate is a record like any other.
func TestAgentProcessBootstrap(t *testing.T) {
	t.Parallel()
	dir := newCADir(t)
	mustMinica(t, dir, "issue", "server", "pki", "--dns", "localhost", "--ip", "127.0.0.1")
	srv := startServe(t, dir, "--listen", "", "--listen-tls", "127.0.0.1:0", "--server-cert", "pki")

	out := mustMinica(t, dir, "token", "web2", "--dns", "web2.svc.example.com", "--expires", "1h", "--json")
	var tok struct {
		Token string `json:"token"`
		ID    string `json:"id"`
	}
	if err := json.Unmarshal([]byte(out), &tok); err != nil || len(tok.Token) != 43 {
		t.Fatalf("minica token --json printed %q (%v); want an object with the token", out, err)
	}
	machine := t.TempDir()
	tokenFile := filepath.Join(machine, "web2.token")
	if err := os.WriteFile(tokenFile, []byte(tok.Token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(machine, "tls.crt"), filepath.Join(machine, "tls.key")
	agentArgs := []string{"agent", "--once", "--url", srv.bases[0], "--ca", filepath.Join(dir, "ca.crt"),
		"--token-file", tokenFile, "--cert", certFile, "--key", keyFile}

	_, stderr, code := minica(t, dir, agentArgs...)
	if code != 0 || !strings.Contains(stderr, " agent-bootstrapped ") || strings.Contains(stderr, tok.Token) {
		t.Fatalf("agent exit %d\n%s\nwant 0, agent-bootstrapped and never the token", code, stderr)
	}
	pair, _ := readPair(t, certFile, keyFile)
	cert := pair.Leaf
	if !slices.Equal(cert.DNSNames, []string{"web2.svc.example.com"}) || !slices.Contains(cert.ExtKeyUsage, x509.ExtKeyUsageServerAuth) {
		t.Errorf("the first certificate has DNS names %v and extKeyUsage %v; want web2.svc.example.com, serverAuth", cert.DNSNames, cert.ExtKeyUsage)
	}
	if info, err := os.Stat(keyFile); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v, %v; want mode 0600", info, err)
	}
	if !strings.Contains(srv.stderr.String(), " bootstrapped name=web2 ") || strings.Contains(srv.stderr.String(), tok.Token) {
		t.Errorf("serve's log lacks the bootstrapped line, or holds the token:\n%s", srv.stderr.String())
	}
	if show := mustMinica(t, dir, "show", "web2", "--json"); !strings.Contains(show, `"status":"valid"`) {
		t.Errorf("minica show web2: %s; want a valid record", show)
	}
	if list := mustMinica(t, dir, "token", "--list", "--all"); !strings.Contains(list, tok.ID) || !strings.Contains(list, "used") {
		t.Errorf("minica token --list:\n%s\nwant %s used", list, tok.ID)
	}

	// Good once: another machine with the same token is refused, and told
	// what to do.
	other := t.TempDir()
	_, stderr, code = minica(t, dir, "agent", "--once", "--url", srv.bases[0], "--ca", filepath.Join(dir, "ca.crt"),
		"--token-file", tokenFile, "--cert", filepath.Join(other, "tls.crt"), "--key", filepath.Join(other, "tls.key"))
	if code != 1 || !strings.Contains(stderr, "serve refused the bootstrap token: 403 token-used") || !strings.Contains(stderr, "minica: hint: a bootstrap token is good once") {
		t.Fatalf("second machine: exit %d\n%s\nwant 1, token-used and the hint", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(other, "tls.key")); !os.IsNotExist(err) {
		t.Errorf("the refused machine has a key file: %v", err)
	}

	// From then on it renews over mTLS like any certificate; the token
	// file is not read again.
	if err := os.Remove(tokenFile); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = minica(t, dir, append(agentArgs, "--renew-at", "0")...)
	if code != 0 || !strings.Contains(stderr, " agent-renewed ") {
		t.Fatalf("renewal: exit %d\n%s\nwant 0 and agent-renewed", code, stderr)
	}
	if next, _ := readPair(t, certFile, keyFile); next.Leaf.Equal(cert) {
		t.Error("the bootstrapped certificate was not renewed")
	}
}

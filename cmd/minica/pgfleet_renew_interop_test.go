//go:build interop

package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Two replicas with a CA directory each on one PostgreSQL database:
// a certificate renewed at one is renewed again at the other, and an
// enrollment link made on the admin host is opened at one replica,
// redeemed at the other, and then used up at both.
func TestServeReplicasRenewEnrollPG(t *testing.T) {
	t.Parallel()
	curl := needTool(t, "curl", "curl")
	openssl := needTool(t, "openssl", "openssl")
	dir, _ := newPGCADir(t, "")
	mustMinica(t, dir, "issue", "server", "pki", "--dns", "localhost", "--ip", "127.0.0.1")
	mustMinica(t, dir, "issue", "client", "app", "--email", "app@example.com")
	pki := filepath.Join(dir, "certs", "pki")
	var reps []*serveProc
	for range 2 {
		reps = append(reps, startServe(t, replicaDir(t, dir), "--listen", "127.0.0.1:0", "--listen-tls", "127.0.0.1:0",
			"--cert", filepath.Join(pki, "current.crt"), "--key", filepath.Join(pki, "current.key"), "--enroll"))
	}
	caFile := filepath.Join(dir, "ca.crt")
	work := t.TempDir()
	// renew posts a new CSR with cert and key to replica i.
	renew := func(i int, cert, key, step string) (string, string) {
		t.Helper()
		csr, newKey, out := filepath.Join(work, step+".csr"), filepath.Join(work, step+".key"), filepath.Join(work, step+".pem")
		runTool(t, openssl, "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", newKey,
			"-subj", "/", "-outform", "DER", "-out", csr)
		code := runTool(t, curl, "-sS", "-o", out, "-w", "%{http_code}", "--cacert", caFile, "--cert", cert, "--key", key,
			"-H", "Content-Type: application/pkcs10", "--data-binary", "@"+csr, reps[i].bases[1]+"/renew")
		if code != "200" {
			t.Fatalf("POST /renew at replica %d = %s\n%s\nserve:\n%s", i, code, readTestFile(t, out), reps[i].stderr)
		}
		return out, newKey
	}
	app := filepath.Join(dir, "certs", "app")
	first, firstKey := renew(1, filepath.Join(app, "current.crt"), filepath.Join(app, "current.key"), "first")
	second, _ := renew(0, first, firstKey, "second")
	if got := runTool(t, openssl, "verify", "-CAfile", caFile, "-purpose", "sslclient", second); !strings.Contains(got, ": OK") {
		t.Errorf("openssl verify of the second successor: %s", got)
	}
	var apps []string
	for _, line := range strings.Split(strings.TrimSpace(mustMinica(t, dir, "list", "--json")), "\n") {
		var r struct{ Name, Status, RenewedBy string }
		json.Unmarshal([]byte(line), &r)
		if r.Name == "app" {
			apps = append(apps, r.Status)
		}
	}
	if len(apps) != 3 {
		t.Errorf("app's records after two renewals at two replicas: %v; want 3", apps)
	}

	// An enrollment link: opened at replica 0, redeemed at replica 1.
	var link struct{ ID, URL string }
	out := mustMinica(t, dir, "enroll", "alice", "--email", "alice@example.com", "--base-url", reps[0].bases[1], "--json")
	if err := json.Unmarshal([]byte(out), &link); err != nil {
		t.Fatal(err)
	}
	token := link.URL[strings.LastIndexByte(link.URL, '/')+1:]
	roots := x509.NewCertPool()
	roots.AddCert(caCert(t, dir))
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	for _, p := range reps {
		p.client = client
	}
	resp, page := reps[0].fetch(t, link.URL)
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindSubmatch(page)
	if resp.StatusCode != 200 || m == nil {
		t.Fatalf("GET the link at replica 0 = %d:\n%s", resp.StatusCode, page)
	}
	form := url.Values{"csrf": {string(m[1])}, "action": {"download"}, "format": {"p12"},
		"password": {"a long bundle password"}, "password2": {"a long bundle password"}}
	resp, err := client.PostForm(reps[1].bases[1]+"/enroll/"+token, form)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("POST download at replica 1 = %d %s:\n%s\nserve:\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), body, reps[1].stderr)
	}
	for i, p := range reps {
		if resp, page := p.fetch(t, p.bases[1]+"/enroll/"+token); resp.StatusCode != 404 || !strings.Contains(string(page), "already used") {
			t.Errorf("the link again at replica %d = %d; want 404 already used", i, resp.StatusCode)
		}
	}
	if list := mustMinica(t, dir, "list"); !strings.Contains(list, "alice") {
		t.Errorf("alice's certificate is not recorded:\n%s", list)
	}
}

// "Renewed at most once a minute" holds across replicas: the limit is in
// the database, checked under the CA lock with the renewal, so that K
// replicas do not give one certificate (or its thief) K successors a
// minute. A certificate renewed at replica 0 is refused at replica 1.
func TestServeReplicasRenewIntervalPG(t *testing.T) {
	t.Parallel()
	curl := needTool(t, "curl", "curl")
	openssl := needTool(t, "openssl", "openssl")
	dir, _ := newPGCADir(t, "")
	mustMinica(t, dir, "issue", "server", "pki", "--dns", "localhost", "--ip", "127.0.0.1")
	mustMinica(t, dir, "issue", "client", "app", "--email", "app@example.com")
	pki := filepath.Join(dir, "certs", "pki")
	var reps []*serveProc
	for range 2 {
		reps = append(reps, startServe(t, replicaDir(t, dir), "--listen", "127.0.0.1:0", "--listen-tls", "127.0.0.1:0",
			"--cert", filepath.Join(pki, "current.crt"), "--key", filepath.Join(pki, "current.key")))
	}
	work := t.TempDir()
	app := filepath.Join(dir, "certs", "app")
	// renew posts a CSR for a new key with app's certificate to replica i
	// and returns the status and the body.
	renew := func(i int, step string) (string, string) {
		t.Helper()
		csr, out := filepath.Join(work, step+".csr"), filepath.Join(work, step+".out")
		if b, err := exec.Command(openssl, "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
			"-keyout", filepath.Join(work, step+".key"), "-subj", "/", "-outform", "DER", "-out", csr).CombinedOutput(); err != nil {
			t.Fatalf("openssl req: %v\n%s", err, b)
		}
		code, err := exec.Command(curl, "-sS", "-o", out, "-w", "%{http_code}", "--cacert", filepath.Join(dir, "ca.crt"),
			"--cert", filepath.Join(app, "current.crt"), "--key", filepath.Join(app, "current.key"),
			"-H", "Content-Type: application/pkcs10", "--data-binary", "@"+csr, reps[i].bases[1]+"/renew").Output()
		if err != nil {
			t.Fatalf("curl: %v", err)
		}
		return string(code), string(readTestFile(t, out))
	}
	if code, body := renew(0, "first"); code != "200" {
		t.Fatalf("POST /renew at replica 0 = %s\n%s\nserve:\n%s", code, body, reps[0].stderr)
	}
	if code, body := renew(1, "second"); code != "429" || !strings.Contains(body, `"reason":"recently-renewed"`) {
		t.Fatalf("the same certificate at replica 1 at once = %s %s; want 429 recently-renewed\nserve:\n%s", code, body, reps[1].stderr)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(mustMinica(t, dir, "list", "--json")), "\n") {
		var r struct{ Name string }
		json.Unmarshal([]byte(line), &r)
		if r.Name == "app" {
			n++
		}
	}
	if n != 2 {
		t.Errorf("app has %d records; want 2 (one renewal)", n)
	}
}

//go:build interop

package main

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"minica/internal/pgtest"
	"minica/revoke"
)

// newPGCADir creates a CA whose database is a fresh PostgreSQL database,
// with a CRL lifetime of crlLifetime (0: the default).
func newPGCADir(t *testing.T, crlLifetime string) (dir, url string) {
	t.Helper()
	url = pgtest.New(t)
	dir = filepath.Join(t.TempDir(), "ca")
	mustMinica(t, dir, "init", "--cn", "Test Root", "--no-password", "--store", url)
	if crlLifetime != "" {
		setCRLLifetime(t, dir, crlLifetime)
	}
	return dir, url
}

// setCRLLifetime edits the CA settings' crl_lifetime, which no flag sets.
func setCRLLifetime(t *testing.T, dir, lifetime string) {
	t.Helper()
	file := filepath.Join(dir, "settings.json")
	data := readTestFile(t, file)
	out := bytes.Replace(data, []byte(`"crl_lifetime": "7d"`), []byte(`"crl_lifetime": "`+lifetime+`"`), 1)
	if bytes.Equal(out, data) {
		t.Fatalf("no crl_lifetime of 7d in %s:\n%s", file, data)
	}
	if err := os.WriteFile(file, out, 0o600); err != nil {
		t.Fatal(err)
	}
}

// replicaDir makes the CA directory of a replica on another host: the CA
// certificate, its key, the chain and the settings (which name the
// store), and none of the certificates issued elsewhere.
func replicaDir(t *testing.T, dir string) string {
	t.Helper()
	r := filepath.Join(t.TempDir(), "replica")
	if err := os.MkdirAll(filepath.Join(r, "certs"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"ca.crt", "ca.key", "chain.pem", "settings.json"} {
		info, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(r, f), readTestFile(t, filepath.Join(dir, f)), info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// rawCRL GETs /crl.der of base without failing the test (for a goroutine).
func rawCRL(client *http.Client, base string) ([]byte, error) {
	resp, err := client.Get(base + "/crl.der")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != 200 {
		err = fmt.Errorf("status %d", resp.StatusCode)
	}
	return body, err
}

// isSigner reports whether replica p says it holds the CRL signer's lease.
func (p *serveProc) isSigner(t *testing.T) bool {
	_, m := p.fetch(t, "/metrics")
	return bytes.Contains(m, []byte("\nminica_serve_crl_signer 1\n"))
}

// Three `minica serve` replicas, each with a CA directory of its own, on
// one PostgreSQL database answer the same: a revocation made elsewhere is
// on every replica's CRL and OCSP at once (LISTEN/NOTIFY); exactly one
// replica signs CRLs; kill -9 of that replica hands the lease to another
// before the CRL's half-life passes; and all along, every replica's CRL
// has its nextUpdate in the future, and no CRL number names two CRLs.
func TestServeReplicasPG(t *testing.T) {
	t.Parallel()
	openssl := needTool(t, "openssl", "openssl")
	const lifetime = 6 * time.Second // half-life 3 s: serve re-signs every 3 s
	dir, _ := newPGCADir(t, "6s")
	mustMinica(t, dir, "issue", "client", "simon", "--email", "simon@example.com")
	simonFile := certFileOf(t, dir, "simon")
	simon := serialOf(t, dir, "simon")
	caFile := filepath.Join(dir, "ca.crt")
	ca := caCert(t, dir)

	var reps []*serveProc
	for range 3 {
		reps = append(reps, startServe(t, replicaDir(t, dir)))
	}
	var signer int
	eventually(t, "exactly one signer", func() string {
		n := 0
		for i, p := range reps {
			if p.isSigner(t) {
				n, signer = n+1, i
			}
		}
		if n != 1 {
			return fmt.Sprintf("%d replicas say they sign", n)
		}
		return ""
	})

	// Watch every live replica's CRL every 50 ms until the end.
	var (
		mu       sync.Mutex
		dead     = map[int]bool{}
		byNumber = map[string][32]byte{}
		problems []string
		lastNum  = map[int]string{}
	)
	stop, watched := make(chan struct{}), make(chan struct{})
	client := &http.Client{Timeout: 5 * time.Second}
	go func() {
		defer close(watched)
		for rounds := 0; rounds < 2000; rounds++ {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			for i, p := range reps {
				mu.Lock()
				skip := dead[i]
				mu.Unlock()
				if skip {
					continue
				}
				der, err := rawCRL(client, p.base)
				now := time.Now()
				mu.Lock()
				if dead[i] { // killed meanwhile
					mu.Unlock()
					continue
				}
				if err != nil {
					problems = append(problems, fmt.Sprintf("replica %d: GET /crl.der: %v", i, err))
				} else if crl, err := revoke.ParseCRL(der, ca); err != nil {
					problems = append(problems, fmt.Sprintf("replica %d: %v", i, err))
				} else {
					n := crl.Number().String()
					if !crl.NextUpdate().After(now) {
						problems = append(problems, fmt.Sprintf("replica %d served CRL %s past its nextUpdate %s at %s", i, n, crl.NextUpdate(), now))
					}
					sum := sha256.Sum256(der)
					if old, ok := byNumber[n]; ok && old != sum {
						problems = append(problems, fmt.Sprintf("CRL number %s names two different CRLs", n))
					}
					byNumber[n] = sum
					if prev := lastNum[i]; prev != "" && crl.Number().Cmp(bigOf(prev)) < 0 {
						problems = append(problems, fmt.Sprintf("replica %d went back from CRL %s to %s", i, prev, n))
					}
					lastNum[i] = n
				}
				mu.Unlock()
			}
		}
	}()
	stopWatch := sync.OnceFunc(func() {
		close(stop)
		<-watched
	})
	defer stopWatch()

	// A revocation made from the CA's own directory reaches every replica.
	mustMinica(t, dir, "revoke", "simon", "--reason", "keyCompromise")
	revoked := time.Now()
	for i, p := range reps {
		eventually(t, fmt.Sprintf("simon on replica %d's CRL", i), func() string {
			if crl, _ := p.servedCRL(t, dir); !listed(crl, simon) {
				return "not listed"
			}
			return ""
		})
		t.Logf("replica %d served the revocation %s after revoke returned", i, time.Since(revoked).Round(time.Millisecond))
		out, err := exec.Command(openssl, "ocsp", "-issuer", caFile, "-cert", simonFile, "-url", p.base, "-CAfile", caFile, "-timeout", "10").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "Response verify OK") || !strings.Contains(string(out), ": revoked\n") {
			t.Errorf("openssl ocsp at replica %d: %v\n%s\nstderr: %s", i, err, out, p.stderr)
		}
	}

	// Let the signer re-sign once, then kill it.
	first := reps[signer].CRLNumber(t, dir)
	resignBy := time.Now().Add(lifetime)
	for reps[signer].CRLNumber(t, dir) == first && time.Now().Before(resignBy) {
		time.Sleep(100 * time.Millisecond)
	}
	if reps[signer].CRLNumber(t, dir) == first {
		t.Fatalf("the signer did not re-sign CRL %s within its lifetime\nstderr: %s", first, reps[signer].stderr)
	}
	mu.Lock()
	dead[signer] = true
	mu.Unlock()
	reps[signer].cmd.Process.Signal(syscall.SIGKILL)
	reps[signer].exited <- <-reps[signer].exited // for the cleanup's wait, too
	killed := time.Now()
	next := -1
	for deadline := killed.Add(lifetime / 2); next < 0; {
		for i, p := range reps {
			if i != signer && p.isSigner(t) {
				next = i
			}
		}
		if next < 0 {
			if time.Now().After(deadline) {
				t.Fatalf("no replica took the signer's lease within the CRL's half-life (%s) of kill -9", lifetime/2)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Logf("replica %d took the lease %s after kill -9 of replica %d", next, time.Since(killed).Round(time.Millisecond), signer)
	// Two lifetimes more: the new signer keeps every CRL fresh.
	time.Sleep(2 * lifetime)
	if !strings.Contains(reps[next].stderr.String(), "crl-signed") {
		t.Errorf("the new signer signed no CRL\nstderr: %s", reps[next].stderr)
	}
	for i, p := range reps {
		if i != signer && i != next && strings.Contains(p.stderr.String(), "crl-signed") {
			t.Errorf("replica %d, never the signer, signed a CRL\nstderr: %s", i, p.stderr)
		}
	}
	stopWatch()
	mu.Lock()
	defer mu.Unlock()
	for _, p := range problems {
		t.Error(p)
	}
	t.Logf("%d CRL numbers served, none twice", len(byNumber))
}

// CRLNumber returns the number of the CRL p serves.
func (p *serveProc) CRLNumber(t *testing.T, dir string) string {
	crl, _ := p.servedCRL(t, dir)
	return crl.Number().String()
}

func bigOf(decimal string) *big.Int {
	n, _ := new(big.Int).SetString(decimal, 10)
	return n
}

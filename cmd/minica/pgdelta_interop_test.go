//go:build interop

package main

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"minica/ca"
	"minica/crlsource"
	"minica/revoke"
)

// deltaReplica is a `minica serve` replica and the CRL bodies this test
// fetched from it itself, so that its metrics tell what others were sent.
type deltaReplica struct {
	*serveProc
	fetched map[string]int // by kind: "complete" or "delta"
}

// crlGet GETs path with the header pairs, counting a CRL body answered
// 200 by its kind: a delta CRL at /crl-delta.*, or one named by the
// Minica-Delta-CRL header, else a complete CRL.
func (r *deltaReplica) crlGet(t *testing.T, path string, header ...string) (*http.Response, []byte) {
	t.Helper()
	resp, body := r.fetch(t, path, header...)
	if resp.StatusCode == http.StatusOK && len(body) > 0 {
		kind := "complete"
		if strings.HasPrefix(path, "/crl-delta.") || resp.Header.Get(crlsource.HeaderDelta) != "" {
			kind = "delta"
		}
		r.fetched[kind]++
	}
	return resp, body
}

// complete returns the complete CRL r serves to a client holding none.
func (r *deltaReplica) complete(t *testing.T, ca *x509.Certificate) *revoke.CRL {
	t.Helper()
	resp, body := r.crlGet(t, "/crl.der")
	if resp.StatusCode != http.StatusOK || resp.Header.Get(crlsource.HeaderDelta) != "" {
		t.Fatalf("GET /crl.der = %d, %s %q; want 200 and a complete CRL", resp.StatusCode, crlsource.HeaderDelta, resp.Header.Get(crlsource.HeaderDelta))
	}
	crl, err := revoke.ParseCRL(body, ca)
	if err != nil {
		t.Fatalf("the complete CRL served: %v", err)
	}
	return crl
}

// crlAnswers returns the counter minica_serve_crl_answers_total of kind
// in r's metrics, less the bodies of that kind this test fetched.
func (r *deltaReplica) crlAnswers(t *testing.T, kind string) int {
	t.Helper()
	_, m := r.fetch(t, "/metrics")
	prefix := fmt.Sprintf("minica_serve_crl_answers_total{kind=%q} ", kind)
	for _, line := range strings.Split(string(m), "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("metric %s%s: %v", prefix, v, err)
			}
			return n - r.fetched[kind]
		}
	}
	t.Fatalf("serve's metrics lack %s:\n%s", prefix, m)
	return 0
}

// deltaLists returns "" when d is a delta CRL against the complete CRL
// numbered base listing exactly the serials (hex) revoked, else what it is.
func deltaLists(d *revoke.CRL, base *big.Int, revoked []string) string {
	var got []string
	for e := range d.Entries() {
		got = append(got, ca.SerialHex(e.Serial))
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(revoked))
	if d.DeltaBase().Cmp(base) != 0 || !slices.Equal(got, want) {
		return fmt.Sprintf("delta CRL %s against %s listing %v; want against %s listing %v", d.Number(), d.DeltaBase(), got, base, want)
	}
	return ""
}

// waitDeltas waits, at most 10 s, until every replica serves at
// /crl-delta.der a delta CRL against base listing the serials revoked,
// the same on all, and checks that each answers it on /crl.der to a client
// naming base as the complete CRL it holds.
func waitDeltas(t *testing.T, reps []*deltaReplica, issuer *x509.Certificate, base *big.Int, revoked []string) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(10 * time.Second)
	took := make([]time.Duration, len(reps))
	served := make([][]byte, len(reps))
	why := make([]string, len(reps))
	for waiting := len(reps); waiting > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 10s, of the replicas serving the delta: %q", why)
		}
		for i, r := range reps {
			if served[i] != nil {
				continue
			}
			resp, body := r.crlGet(t, "/crl-delta.der")
			if resp.StatusCode != http.StatusOK {
				why[i] = fmt.Sprintf("GET /crl-delta.der = %d", resp.StatusCode)
				continue
			}
			d, err := revoke.ParseDelta(body, issuer)
			if err != nil {
				t.Fatalf("replica %d: the delta CRL served: %v", i+1, err)
			}
			if why[i] = deltaLists(d, base, revoked); why[i] == "" {
				took[i], served[i] = time.Since(start), body
				waiting--
			}
		}
	}
	t.Logf("the delta listing %d reached replicas 1, 2, 3 after %v", len(revoked), took)
	for i, r := range reps {
		if !bytes.Equal(served[i], served[0]) {
			t.Errorf("replica %d serves another delta CRL than replica 1", i+1)
		}
		resp, body := r.crlGet(t, "/crl.der", crlsource.HeaderBase, base.String())
		if got, want := resp.Header.Get(crlsource.HeaderDelta), "base="+base.String(); resp.StatusCode != http.StatusOK || got != want {
			t.Errorf("replica %d: GET /crl.der with %s: %s = %d, %s %q; want 200, %q", i+1, base, crlsource.HeaderBase, resp.StatusCode, crlsource.HeaderDelta, got, want)
		} else if !bytes.Equal(body, served[i]) {
			t.Errorf("replica %d: GET /crl.der with %s: %s answered another CRL than /crl-delta.der", i+1, crlsource.HeaderBase, base)
		}
	}
}

// opensslAgrees checks with openssl verify -use_deltas -extended_crl, on
// the complete and delta CRLs r serves, that the clients revoked are
// revoked and alice is not; and that with the complete CRL alone they
// pass, so that the delta is what revokes them.
func opensslAgrees(t *testing.T, openssl, dir string, r *deltaReplica, revoked []string) {
	t.Helper()
	tmp := t.TempDir()
	complete, delta := filepath.Join(tmp, "complete.pem"), filepath.Join(tmp, "delta.pem")
	for file, path := range map[string]string{complete: "/crl.pem", delta: "/crl-delta.pem"} {
		resp, body := r.crlGet(t, path)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s = %d", path, resp.StatusCode)
		}
		if err := os.WriteFile(file, body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	verify := func(leaf string, crls ...string) (string, error) {
		args := []string{"verify", "-crl_check", "-use_deltas", "-extended_crl", "-CAfile", filepath.Join(dir, "ca.crt")}
		for _, c := range crls {
			args = append(args, "-CRLfile", c)
		}
		out, err := exec.Command(openssl, append(args, certFileOf(t, dir, leaf))...).CombinedOutput()
		return string(out), err
	}
	if out, err := verify("alice", complete, delta); err != nil || !strings.Contains(out, ": OK") {
		t.Errorf("openssl verify alice with the delta: %v\n%s", err, out)
	}
	for _, n := range revoked {
		if out, err := verify(n, complete, delta); err == nil || !strings.Contains(out, "certificate revoked") {
			t.Errorf("openssl verify %s with the delta: %v; want certificate revoked\n%s", n, err, out)
		}
		if out, err := verify(n, complete); err != nil || !strings.Contains(out, ": OK") {
			t.Errorf("openssl verify %s with the complete CRL alone: %v; want OK, the revocation being in the delta only\n%s", n, err, out)
		}
	}
}

// Three `minica serve` replicas on one PostgreSQL database, the CA signing
// delta CRLs from the first entry: a `minica revoke` made from the CA's
// own directory signs a delta CRL, which every replica serves within
// milliseconds (LISTEN/NOTIFY; the poll alone takes up to 250 ms, and
// only the logged times, not the test, tell the two apart) at
// /crl-delta.der and to a client naming its complete CRL, with no new
// complete CRL; a proxy following one replica refuses
// the revoked clients, sent deltas only after its first complete CRL; and
// OpenSSL, given a replica's complete and delta CRLs, finds the client
// revoked only in the delta revoked.
func TestServeReplicasDeltaPG(t *testing.T) {
	t.Parallel()
	openssl := needTool(t, "openssl", "openssl")
	dir, _ := newPGCADir(t, "")
	f := &proxyFixture{dir: dir}
	f.upstream = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(r.Header)
	}))
	t.Cleanup(f.upstream.Close)
	mustMinica(t, dir, "issue", "server", "app", "--dns", "localhost", "--ip", "127.0.0.1")
	names := []string{"alice", "carol", "dave"}
	for _, n := range names {
		mustMinica(t, dir, "issue", "client", n)
	}
	issuer := caCert(t, dir)

	// Replica 3 listens where the complete CRL's freshest CRL extension
	// says the delta is: the port is reserved before the first CRL.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr3 := ln.Addr().String()
	ln.Close()
	mustMinica(t, dir, "crl", "delta", "--from", "-1", "--url", "http://"+addr3+"/crl-delta.der")
	mustMinica(t, dir, "crl")

	var reps []*deltaReplica
	for i := range 3 {
		var args []string
		if i == 2 {
			args = []string{"--listen", addr3}
		}
		reps = append(reps, &deltaReplica{serveProc: startServe(t, replicaDir(t, dir), args...), fetched: map[string]int{}})
	}
	base := reps[0].complete(t, issuer).Number()
	for i, r := range reps[1:] {
		if n := r.complete(t, issuer).Number(); n.Cmp(base) != 0 {
			t.Fatalf("replica %d serves complete CRL %s; replica 1 serves %s", i+2, n, base)
		}
	}
	p := f.startProxy(t, "--crl", reps[1].base+"/crl.der", "--crl-refresh", "1h", "--reload-interval", "0")
	url := "https://" + p.addr + "/"
	for _, n := range names {
		if status, _, body, _, err := get(f.client(t, n), url); err != nil || status != 200 {
			t.Fatalf("GET as %s: %d %q %v", n, status, body, err)
		}
	}

	var revoked []string
	for _, n := range names[1:] {
		revoked = append(revoked, serialOf(t, dir, n))
		waitLongPoll(t, reps[1].serveProc)
		out := mustMinica(t, dir, "revoke", n)
		if !strings.Contains(out, "published delta CRL") {
			t.Fatalf("minica revoke %s said %q; want a delta CRL published", n, out)
		}
		waitDeltas(t, reps, issuer, base, revoked)
		waitRefused(t, f, reps[1].serveProc, p, n)
		if status, _, _, _, err := get(f.client(t, "alice"), url); err != nil || status != 200 {
			t.Errorf("alice after %s's revocation: %d %v", n, status, err)
		}
		for i, r := range reps {
			if got := r.complete(t, issuer).Number(); got.Cmp(base) != 0 {
				t.Errorf("after %s's revocation replica %d serves complete CRL %s; want %s unchanged", n, i+1, got, base)
			}
		}
	}
	for _, n := range names[1:] {
		if _, _, _, _, err := get(f.client(t, n), url); err == nil {
			t.Errorf("%s got through the proxy after the last revocation", n)
		}
	}

	opensslAgrees(t, openssl, dir, reps[2], names[1:])

	deltas, completes := reps[1].crlAnswers(t, "delta"), reps[1].crlAnswers(t, "complete")
	t.Logf("replica 2 sent the proxy %d delta CRLs and %d complete CRLs", deltas, completes)
	if deltas < 1 {
		t.Errorf("replica 2 sent the proxy %d delta CRLs; want at least 1", deltas)
	}
	if completes > 1 {
		t.Errorf("replica 2 sent the proxy %d complete CRLs; want at most 1", completes)
	}
	if strings.Contains(p.stderr.String(), "crl-fetch-failed") {
		t.Errorf("the proxy logged failed fetches:\n%s", p.stderr)
	}
}

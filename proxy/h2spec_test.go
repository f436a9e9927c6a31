package proxy

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/summerwind/h2spec/config"
	"github.com/summerwind/h2spec/generic"
	"github.com/summerwind/h2spec/hpack"
	"github.com/summerwind/h2spec/http2"
	h2 "github.com/summerwind/h2spec/spec"
)

// knownH2specFailures are the h2spec cases that fail against the proxy
// because Go's HTTP/2 server (net/http) fails them: TestH2spec checks that
// each fails against a plain net/http server too. docs/proxy.md ("HTTP/2
// conformance") lists them with these reasons.
var knownH2specFailures = map[string]string{
	"http2/4.2/3":     "a HEADERS frame larger than SETTINGS_MAX_FRAME_SIZE is answered, not refused with FRAME_SIZE_ERROR",
	"http2/6.5.3/1":   "two SETTINGS_INITIAL_WINDOW_SIZE values in one SETTINGS frame end the connection with PROTOCOL_ERROR",
	"http2/8.1.2.2/1": "a connection-specific header field (Connection) gets a 400 response, not a PROTOCOL_ERROR stream error",
	"http2/8.1.2.2/2": "a TE header field other than \"trailers\" gets a 400 response, not a PROTOCOL_ERROR stream error",
}

// h2specResult is what a run of h2spec reports to TestH2spec.
type h2specResult struct {
	Passed, Skipped int
	Failed          map[string]string // case ID -> description and error
}

// TestH2spec runs h2spec (github.com/summerwind/h2spec, as a library:
// its CLI cannot present a client certificate, its config can) against
// the proxy's HTTP/2 server with a client certificate, and against a
// plain net/http HTTP/2 server, each in a child process (h2spec prints
// to stdout and exits on a failed dial). Every case must pass against the
// proxy or be a known failure that the plain server fails too.
func TestH2spec(t *testing.T) {
	if os.Getenv("MINICA_H2SPEC_ADDR") != "" {
		t.Skip("the h2spec child runs in TestH2specChild")
	}
	t.Parallel() // mostly waiting for h2spec's 2 s timeouts
	e := newEnv(t, nil)
	cert, key := e.ca.Client(t, "alice")
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "alice.crt"), filepath.Join(dir, "alice.key")
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o644)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)

	plain := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("hello from upstream"))
	}))
	plain.EnableHTTP2 = true
	plain.Config.ErrorLog = log.New(io.Discard, "", 0)
	plain.StartTLS()
	t.Cleanup(plain.Close)

	proxyRes, plainRes := runH2specPair(t, e.addr, plain.Listener.Addr().String(), certFile, keyFile)
	if unexpected := unexpectedH2specFailures(proxyRes, plainRes); len(unexpected) > 0 {
		// h2spec waits 2 s for each answer: on a loaded machine a case
		// can time out. Such a case is run again, and must fail twice.
		t.Logf("h2spec: %d unexpected failures (%v), running h2spec again", len(unexpected), unexpected)
		again, plainAgain := runH2specPair(t, e.addr, plain.Listener.Addr().String(), certFile, keyFile)
		for id := range proxyRes.Failed {
			if _, still := again.Failed[id]; !still && slices.Contains(unexpected, id) {
				delete(proxyRes.Failed, id)
			}
		}
		maps.Copy(plainRes.Failed, plainAgain.Failed)
	}
	t.Logf("h2spec against the proxy: %d passed, %d skipped, %d failed; against net/http: %d passed, %d skipped, %d failed",
		proxyRes.Passed, proxyRes.Skipped, len(proxyRes.Failed), plainRes.Passed, plainRes.Skipped, len(plainRes.Failed))
	if proxyRes.Passed < 100 {
		t.Errorf("h2spec passed only %d cases against the proxy: did the client certificate get through?\n%s", proxyRes.Passed, e.log.String())
	}
	for _, id := range slices.Sorted(maps.Keys(proxyRes.Failed)) {
		t.Logf("h2spec %s fails against the proxy: %s", id, proxyRes.Failed[id])
		_, known := knownH2specFailures[id]
		_, goToo := plainRes.Failed[id]
		switch {
		case !known:
			t.Errorf("h2spec %s fails against the proxy (net/http fails it too: %v), and is not a known failure: %s", id, goToo, proxyRes.Failed[id])
		case !goToo:
			t.Errorf("h2spec %s fails against the proxy but not against net/http, so it is the proxy's: %s", id, proxyRes.Failed[id])
		}
	}
	// Its connections that end in the middle of a request are the
	// client's doing, not an upstream's.
	for _, line := range strings.Split(e.log.String(), "\n") {
		if strings.Contains(line, " request ") && strings.Contains(line, " status=502") {
			t.Errorf("h2spec: a request logged as an upstream error: %s", line)
		}
	}
	doc, err := os.ReadFile("../docs/proxy.md")
	if err != nil {
		t.Fatal(err)
	}
	for id := range knownH2specFailures {
		if _, ok := proxyRes.Failed[id]; !ok {
			t.Logf("known h2spec failure %s now passes against the proxy: drop it from knownH2specFailures and docs/proxy.md", id)
		}
		if !bytes.Contains(doc, []byte("`"+id+"`")) {
			t.Errorf("docs/proxy.md does not list the known h2spec failure `%s`", id)
		}
	}
}

// runH2specPair runs h2spec against the proxy and the plain server at
// once; a child that fails to run at all (h2spec exits when a dial fails)
// is run once more.
func runH2specPair(t *testing.T, proxyAddr, plainAddr, certFile, keyFile string) (proxyRes, plainRes h2specResult) {
	run := func(addr, cert, key string) (h2specResult, error) {
		res, err := runH2spec(t, addr, cert, key)
		if err != nil {
			t.Logf("h2spec against %s did not run (%v), running it again", addr, err)
			res, err = runH2spec(t, addr, cert, key)
		}
		return res, err
	}
	var wg sync.WaitGroup
	var proxyErr, plainErr error
	wg.Go(func() { proxyRes, proxyErr = run(proxyAddr, certFile, keyFile) })
	wg.Go(func() { plainRes, plainErr = run(plainAddr, "", "") })
	wg.Wait()
	if proxyErr != nil || plainErr != nil {
		t.Fatalf("h2spec against the proxy: %v\nagainst net/http: %v", proxyErr, plainErr)
	}
	return proxyRes, plainRes
}

// unexpectedH2specFailures lists the cases that fail against the proxy and
// are not known failures of net/http that it fails too.
func unexpectedH2specFailures(proxyRes, plainRes h2specResult) []string {
	var ids []string
	for id := range proxyRes.Failed {
		_, known := knownH2specFailures[id]
		_, goToo := plainRes.Failed[id]
		if !known || !goToo {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// runH2spec runs TestH2specChild in a child process against addr, with a
// client certificate when certFile is set.
func runH2spec(t *testing.T, addr, certFile, keyFile string) (h2specResult, error) {
	out := filepath.Join(t.TempDir(), "result.json")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestH2specChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "MINICA_H2SPEC_ADDR="+addr, "MINICA_H2SPEC_CERT="+certFile,
		"MINICA_H2SPEC_KEY="+keyFile, "MINICA_H2SPEC_OUT="+out)
	output, err := cmd.CombinedOutput()
	if err != nil {
		return h2specResult{}, fmt.Errorf("%v\n%s", err, output)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return h2specResult{}, fmt.Errorf("%v\n%s", err, output)
	}
	var res h2specResult
	return res, json.Unmarshal(data, &res)
}

// TestH2specChild is the child process of TestH2spec; it is skipped
// unless MINICA_H2SPEC_ADDR is set.
func TestH2specChild(t *testing.T) {
	addr := os.Getenv("MINICA_H2SPEC_ADDR")
	if addr == "" {
		t.Skip("only run by TestH2spec")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	c := &config.Config{
		Host: host, Port: n, Path: "/", Timeout: 2 * time.Second, MaxHeaderLen: 4000,
		TLS: true, Insecure: true, // the server's certificate is not what is tested
		CertFile: os.Getenv("MINICA_H2SPEC_CERT"), CertKeyFile: os.Getenv("MINICA_H2SPEC_KEY"),
	}
	groups := []*h2.TestGroup{generic.Spec(), http2.Spec(), hpack.Spec()}
	res := h2specResult{Failed: map[string]string{}}
	var walk func(g *h2.TestGroup)
	walk = func(g *h2.TestGroup) {
		for i, tc := range append(g.Tests, g.StrictTests...) {
			switch r := tc.Result; {
			case r == nil:
			case r.Failed:
				res.Failed[g.ID()+"/"+strconv.Itoa(i+1)] = tc.Desc + ": " + strings.ReplaceAll(fmt.Sprint(r.Error), "\n", "; ")
			case r.Skipped:
				res.Skipped++
			default:
				res.Passed++
			}
		}
		for _, sub := range g.Groups {
			walk(sub)
		}
	}
	for _, g := range groups {
		g.Test(c)
		walk(g)
	}
	data, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(os.Getenv("MINICA_H2SPEC_OUT"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

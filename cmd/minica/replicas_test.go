package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The tests of this file run one `minica serve` and several `minica proxy`
// replicas following its CRL URL, as a deployment does (issue 14, points 9
// and 10).

// freshClient is a client of name that opens a new connection (a new mTLS
// handshake) for every request.
func (f *proxyFixture) freshClient(t *testing.T, name string) *http.Client {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(readFile(t, filepath.Join(f.dir, "ca.crt")))
	cert, err := tls.LoadX509KeyPair(f.file(t, name, ".crt"), f.file(t, name, ".key"))
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		DisableKeepAlives: true,
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 5 * time.Second}
}

// waitLongPolls waits, a bounded time, until n long polls wait at serve.
func waitLongPolls(t *testing.T, s *serveProc, n int) {
	t.Helper()
	want := fmt.Sprintf("\nminica_serve_long_polls %d\n", n)
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body := s.fetch(t, "/metrics")
		if strings.Contains("\n"+string(body), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve: not %d long polls waiting after 10s:\n%s", n, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// validLoad requests / as a valid client on every replica, over keep-alive
// connections, until stop is closed (at most a minute), and counts the
// answers that are not 200.
type validLoad struct {
	stop     chan struct{}
	wg       sync.WaitGroup
	ok, bad  atomic.Int64
	mu       sync.Mutex
	failures []string
}

func startValidLoad(t *testing.T, f *proxyFixture, urls []string) *validLoad {
	t.Helper()
	l := &validLoad{stop: make(chan struct{})}
	for _, url := range urls {
		c := f.client(t, "alice")
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
				select {
				case <-l.stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
				if status, _, body, _, err := get(c, url); err != nil || status != 200 {
					l.bad.Add(1)
					l.mu.Lock()
					if len(l.failures) < 10 {
						l.failures = append(l.failures, fmt.Sprintf("%s: %d %q %v", url, status, body, err))
					}
					l.mu.Unlock()
					continue
				}
				l.ok.Add(1)
			}
		}()
	}
	return l
}

func (l *validLoad) end() {
	close(l.stop)
	l.wg.Wait()
}

// letThrough reports whether c gets a 200 from url.
func letThrough(c *http.Client, url string) bool {
	status, _, _, _, err := get(c, url)
	return err == nil && status == 200
}

// Ten proxies follow one `minica serve` by its long poll (their own polling
// is an hour): after each of ten `minica revoke`s, every replica refuses
// the revoked client's new connections within a second of revoke
// returning, while a valid client gets 200 from all of them throughout
// (issue 14, point 9).
func TestReplicasProcessRevocation(t *testing.T) {
	t.Parallel()
	const replicas, revocations = 10, 10
	f := newProxyFixture(t)
	var names []string
	for i := range revocations {
		names = append(names, fmt.Sprintf("user%d", i))
		mustMinica(t, f.dir, "issue", "client", names[i])
	}
	s := startServe(t, f.dir)
	var procs []*proxyProc
	var urls []string
	for range replicas {
		p := f.startProxy(t, "--crl", s.base+"/crl.der", "--crl-refresh", "1h", "--reload-interval", "0")
		procs = append(procs, p)
		urls = append(urls, "https://"+p.addr+"/")
	}
	for _, url := range urls {
		for _, n := range names {
			if !letThrough(f.freshClient(t, n), url) {
				t.Fatalf("%s refused by %s before any revocation", n, url)
			}
		}
	}
	load := startValidLoad(t, f, urls)
	defer load.end()

	var worst time.Duration
	for _, n := range names {
		waitLongPolls(t, s, replicas)
		c := f.freshClient(t, n)
		mustMinica(t, f.dir, "revoke", n)
		revoked := time.Now()
		took := make([]time.Duration, replicas)
		var wg sync.WaitGroup
		for i, url := range urls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for deadline := revoked.Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
					if !letThrough(c, url) {
						took[i] = time.Since(revoked)
						return
					}
				}
				took[i] = -1
			}()
		}
		wg.Wait()
		for i, d := range took {
			switch {
			case d < 0:
				t.Fatalf("%s still let through by replica %d 10s after minica revoke returned\n%s", n, i, procs[i].stderr)
			case d > time.Second:
				t.Errorf("%s refused by replica %d only %s after minica revoke returned; want within 1s", n, i, d.Round(time.Millisecond))
			}
			worst = max(worst, d)
		}
		slices.Sort(took)
		t.Logf("%s refused by all %d replicas after %s (first %s)", n, replicas,
			took[replicas-1].Round(time.Millisecond), took[0].Round(time.Millisecond))
	}
	load.end()
	load.stop = make(chan struct{}) // for the deferred end
	if bad := load.bad.Load(); bad != 0 {
		t.Errorf("the valid client got %d failed requests (of %d):\n%s", bad, bad+load.ok.Load(), strings.Join(load.failures, "\n"))
	}
	if load.ok.Load() == 0 {
		t.Error("the valid client made no request")
	}
	t.Logf("worst %s; the valid client got %d answers, all 200", worst.Round(time.Millisecond), load.ok.Load())
	for i, p := range procs {
		if strings.Contains(p.stderr.String(), "crl-fetch-failed") {
			t.Errorf("replica %d logged failed fetches:\n%s", i, p.stderr)
		}
	}
}

// serveAt starts serve on addr, retrying a bounded time while the port is
// still held by the process killed before.
func serveAt(t *testing.T, dir, addr string, args ...string) *serveProc {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		ln, err := net.Listen("tcp", addr)
		if err == nil {
			ln.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still in use after 5s: %v", addr, err)
		}
	}
	return startServe(t, dir, append([]string{"--listen", addr}, args...)...)
}

// With serve killed, replicas keep serving on their last good CRL until its
// nextUpdate, then fail closed with the expired-CRL reason (503, logged,
// /healthz); once serve is back with a fresh CRL they follow it again with
// no restart of their own (issue 14, point 10).
func TestReplicasProcessServeKilledUntilNextUpdate(t *testing.T) {
	t.Parallel()
	const replicas = 3
	f := newProxyFixture(t)
	mustMinica(t, f.dir, "crl", "--next-update", "6s")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	// --no-sign: this serve does not re-sign the 6s CRL at its half-life.
	s := serveAt(t, f.dir, addr, "--no-sign")
	crl, _ := s.servedCRL(t, f.dir)
	next := crl.NextUpdate()
	var procs []*proxyProc
	var urls []string
	for range replicas {
		p := f.startProxy(t, "--crl", s.base+"/crl.der", "--crl-refresh", "1s", "--reload-interval", "0")
		procs = append(procs, p)
		urls = append(urls, "https://"+p.addr+"/")
	}
	waitLongPolls(t, s, replicas)
	s.cmd.Process.Kill()
	<-s.exited
	s.exited <- nil // for the cleanup
	for _, p := range procs {
		p.waitLog(t, "crl-fetch-failed reason=connect ")
	}

	// Until nextUpdate every replica serves on the CRL it holds.
	alice := f.freshClient(t, "alice")
	var kept []*http.Client // keep-alive connections of alice, one a replica
	for range urls {
		kept = append(kept, f.client(t, "alice"))
	}
	served := 0
	for time.Until(next) > 500*time.Millisecond {
		for i, url := range urls {
			if status, _, body, _, err := get(alice, url); err != nil || status != 200 {
				t.Fatalf("replica %d, %s before nextUpdate with serve down: %d %q %v", i, time.Until(next).Round(time.Millisecond), status, body, err)
			}
			if status, _, body, _, err := get(kept[i], url); err != nil || status != 200 {
				t.Fatalf("replica %d, open connection, %s before nextUpdate with serve down: %d %q %v", i, time.Until(next).Round(time.Millisecond), status, body, err)
			}
			served++
		}
		time.Sleep(200 * time.Millisecond)
	}
	if served == 0 {
		t.Fatal("nextUpdate came before any request with serve down")
	}

	// Past it, every replica fails closed: a new connection is refused in
	// its handshake, a request on an open one gets 503.
	time.Sleep(time.Until(next))
	for i, url := range urls {
		eventually(t, fmt.Sprintf("replica %d past nextUpdate", i), func() string {
			if letThrough(alice, url) {
				return "letting alice's new connections through"
			}
			status, _, body, _, err := get(kept[i], url)
			if err != nil || status != 503 || !strings.Contains(body, "revocation list expired") {
				return fmt.Sprintf("answering %d %q %v on an open connection", status, body, err)
			}
			return ""
		})
		procs[i].waitLog(t, "handshake-refused", "reason=crl-expired")
		procs[i].waitLog(t, "crl-expired-error", `hint="on the CA host, publish a fresh one with 'minica crl', or run 'minica serve' there`)
		if code, body := plainGet(t, "http://"+procs[i].metricsAddr+"/healthz"); code != 503 || !strings.HasPrefix(body, "unavailable: CRL expired at ") {
			t.Errorf("replica %d /healthz past nextUpdate: %d %q", i, code, body)
		}
	}

	// The CA host comes back with a fresh CRL: the same processes follow it.
	mustMinica(t, f.dir, "crl")
	serveAt(t, f.dir, addr)
	for i, url := range urls {
		deadline := time.Now().Add(15 * time.Second)
		for !letThrough(alice, url) {
			if time.Now().After(deadline) {
				t.Fatalf("replica %d still refuses alice 15s after serve came back\n%s", i, procs[i].stderr)
			}
			time.Sleep(100 * time.Millisecond)
		}
		select {
		case err := <-procs[i].exited:
			t.Fatalf("replica %d exited: %v", i, err)
		default:
		}
	}
}

package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"io"
	"iter"
	"math/big"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"minica/crlsource"
	"minica/internal/testca"
	"minica/revoke"
)

// bigSerial is the i-th of a sequence of random-looking 128-bit serials.
func bigSerial(i int) *big.Int {
	var buf [16]byte
	binary.BigEndian.PutUint64(buf[:8], uint64(i)*0x9e3779b97f4a7c15|1<<63)
	binary.BigEndian.PutUint64(buf[8:], uint64(i))
	return new(big.Int).SetBytes(buf[:])
}

// bigCRL signs a CRL of ca numbered number that lists the first n
// bigSerials, in no order, as a CA lists them.
func bigCRL(t *testing.T, ca *testca.CA, number int64, n int, now time.Time) []byte {
	t.Helper()
	entries := func(yield func(revoke.Entry) bool) {
		for i := range n {
			if !yield(revoke.Entry{Serial: bigSerial(i), RevokedAt: now.Add(-time.Hour), Reason: revoke.KeyCompromise}) {
				return
			}
		}
	}
	der, err := revoke.Build(revoke.Params{Issuer: ca.Cert, Signer: ca.Key, Number: big.NewInt(number),
		ThisUpdate: now.Add(-time.Minute), NextUpdate: now.Add(time.Hour)}, iter.Seq[revoke.Entry](entries))
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// TestFollowedReloadKeepsOnlyTheParsedSet checks the memory contract of a
// proxy following a CRL URL: after a reload of a large CRL it holds the
// parsed set of the new CRL, not its DER (in the Follower, the fetch
// buffer or the trust) and not the set of the CRL it replaced, though a
// client's connection from before the reload is still open. Either
// would put what the proxy keeps above the DER's size; the parsed set is
// about 56% of it.
func TestFollowedReloadKeepsOnlyTheParsedSet(t *testing.T) {
	const n = 200_000
	ca := testca.New(t, "Memory CA")
	now := time.Now()
	first, second := bigCRL(t, ca, 1, n, now), bigCRL(t, ca, 2, n+1, now)
	var body atomic.Pointer[[]byte]
	body.Store(&first)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data := *body.Load()
		if r.Header.Get("If-None-Match") == crlsource.Tag(data) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.Write(data)
	}))
	t.Cleanup(srv.Close)
	// What the test itself holds (both CRLs, the server) is the baseline.
	var base runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&base)
	f := &crlsource.Follower{HTTP: &crlsource.HTTP{URL: srv.URL}, Refresh: 20 * time.Millisecond}
	if err := f.Start(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *Config) {
		c.CRL = f
		c.LoadCA = func() ([]*x509.Certificate, error) { return []*x509.Certificate{ca.Cert}, nil }
	})
	// A connection open across the reload keeps the configuration of its
	// handshake, and must not keep the CRL replaced through it.
	cert, key := ca.Client(t, "alice")
	client := e.client(cert, key, false)
	get := func() {
		t.Helper()
		resp, err := client.Get(e.url("/"))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET = %s; want 200", resp.Status)
		}
	}
	get()
	body.Store(&second)
	deadline := time.Now().Add(10 * time.Second)
	for e.p.trust.Load().crl.Number().Int64() != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the proxy did not reload the second CRL within 10s:\n%s", e.log.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The Follower lets go of the bytes once Changed has returned.
	var kept int64
	for {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		kept = int64(m.HeapAlloc) - int64(base.HeapAlloc)
		if kept < int64(len(second)) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	get() // on the same connection
	t.Logf("%d entries: DER %d bytes, the proxy keeps %d bytes (%.0f%%)", n+1, len(second), kept, 100*float64(kept)/float64(len(second)))
	if kept >= int64(len(second)) {
		t.Errorf("after a reload of a %d-entry CRL the proxy keeps %d bytes; want less than the %d bytes of its DER", n+1, kept, len(second))
	}
	if !e.p.trust.Load().crl.IsRevoked(bigSerial(n)) {
		t.Error("the last serial of the second CRL is not revoked")
	}
	runtime.KeepAlive(first)
	runtime.KeepAlive(second)
}

// A handshake that began before a reload, with the configuration of the
// trust replaced, is judged by the trust in use: the configuration no
// longer reaches the CRL it was made with.
func TestHandshakeAcrossReloadJudgedByTrustInUse(t *testing.T) {
	e := newEnv(t, nil)
	alice, _ := e.ca.Client(t, "alice")
	cfg := e.p.trust.Load().tls
	cs := tls.ConnectionState{PeerCertificates: []*x509.Certificate{alice}, VerifiedChains: [][]*x509.Certificate{{alice, e.ca.Cert}}}
	if err := cfg.VerifyConnection(cs); err != nil {
		t.Fatalf("VerifyConnection() before the reload = %v; want nil", err)
	}
	e.setCRL(e.makeCRL(alice.SerialNumber))
	if err := e.p.Reload(); err != nil {
		t.Fatal(err)
	}
	err := cfg.VerifyConnection(cs)
	var ve *VerifyError
	if !errors.As(err, &ve) || ve.Reason != string(revoke.ReasonRevoked) {
		t.Fatalf("VerifyConnection() of the configuration replaced, after alice's revocation = %v; want revoked", err)
	}
}

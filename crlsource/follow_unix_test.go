//go:build unix

package crlsource

import (
	"context"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// A FIFO planted as the cache file is reported, not waited on: Start
// takes the URL's CRL.
func TestFollowerCacheFIFO(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "crl.cache")
	if err := syscall.Mkfifo(cache, 0o644); err != nil {
		t.Fatal(err)
	}
	_, srv := newCRLServer(t, []byte("one"), false)
	tk := &taker{got: make(chan []byte, 4)}
	f := newFollower(srv.URL, tk)
	f.Cache = cache
	done := make(chan error, 1)
	go func() { done <- f.Start(context.Background(), tk.FetchFailed) }()
	select {
	case err := <-done:
		if cur, _ := f.Current(); err != nil || string(cur) != "one" {
			t.Fatalf("Start() = %v, CRL %q; want the URL's", err, cur)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Start() still waiting on the FIFO after 30s")
	}
	tk.mu.Lock()
	defer tk.mu.Unlock()
	if !slices.Contains(tk.reasons, ReasonCache) {
		t.Fatalf("Failed reasons = %q; want %q", tk.reasons, ReasonCache)
	}
}

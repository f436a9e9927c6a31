package acme

import (
	"testing"

	xacme "golang.org/x/crypto/acme"
)

// BenchmarkOrder runs whole orders (new order, http-01 validated for
// real, finalize, download) of one client against a Server on a file
// store, for profiles of the server's path; scripts/bench/acme.sh
// measures it against step-ca.
func BenchmarkOrder(b *testing.B) {
	h := newHarness(b, harnessOptions{noEAB: true})
	cl := h.client(b)
	if _, err := h.register(b, cl, nil); err != nil {
		b.Fatal(err)
	}
	key := newKey(b)
	for b.Loop() {
		if _, err := h.obtain(b, cl, key, xacme.DomainIDs("localhost")...); err != nil {
			b.Fatal(err)
		}
	}
}

package revoke_test

import (
	"math/big"
	"runtime"
	"slices"
	"testing"
	"time"

	"minica/internal/testca"
	"minica/revoke"
)

// TestParsedSetSmallerThanDER checks the memory contract of ParseCRL: what
// it keeps for a CRL is smaller than the CRL's DER.
func TestParsedSetSmallerThanDER(t *testing.T) {
	ca := newCA(t, "Memory Root", testca.NewKey(t), testNow)
	// Small CRLs are below the noise of the heap statistics.
	for _, n := range []int{100_000, 300_000} {
		der := synthCRL(t, ca, n)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		crl, err := revoke.ParseCRL(der, ca.Cert)
		if err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		kept := int64(after.HeapAlloc) - int64(before.HeapAlloc)
		t.Logf("%d entries: DER %d bytes, parsed CRL %d bytes (%.0f%%)", n, len(der), kept, 100*float64(kept)/float64(len(der)))
		if kept >= int64(len(der)) {
			t.Errorf("%d entries: parsed CRL keeps %d bytes; want less than the %d bytes of DER", n, kept, len(der))
		}
		runtime.KeepAlive(crl)
		runtime.KeepAlive(der)
	}
}

// TestParseCRLAllocatesOneTable bounds what ParseCRL allocates in all for a
// CRL whose serials are out of order (the order of revocation, as a CA
// lists them): the parsed set and its index, sorted in place. A copy of
// the DER, or a second table to sort into, would double it. Total
// allocation bounds the peak from above, whatever the garbage collector
// does; this is a reload's transient memory, besides the DER read.
func TestParseCRLAllocatesOneTable(t *testing.T) {
	ca := newCA(t, "Memory Root", testca.NewKey(t), testNow)
	const n = 100_000
	der := synthCRL(t, ca, n)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	crl, err := revoke.ParseCRL(der, ca.Cert)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.IsSortedFunc(slices.Collect(crl.Entries()), func(a, b revoke.Entry) int { return a.Serial.Cmp(b.Serial) }) {
		t.Fatal("Entries() out of order")
	}
	total := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d entries: DER %d bytes, ParseCRL allocated %d bytes (%.0f%%)", n, len(der), total, 100*float64(total)/float64(len(der)))
	if limit := uint64(len(der)) * 2 / 3; total >= limit {
		t.Errorf("ParseCRL allocated %d bytes for %d entries; want under %d, two thirds of the DER (the parsed set is 56%%)", total, n, limit)
	}
}

// TestBuildMillionEntriesMemory bounds what Build allocates for 10^6
// entries, given no size hint. Total allocation bounds the peak heap growth
// from above, so this holds however the garbage collector runs. The entries
// are made beforehand so that only Build is measured.
func TestBuildMillionEntriesMemory(t *testing.T) {
	ca := newCA(t, "Memory Root", testca.NewKey(t), testNow)
	entries := slices.Collect(synthEntries(1_000_000, testNow))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	der, err := revoke.Build(revoke.Params{Issuer: ca.Cert, Signer: ca.Key, Number: big.NewInt(1),
		ThisUpdate: testNow, NextUpdate: testNow.Add(time.Hour)}, slices.Values(entries))
	if err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	total := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d entries: CRL %d MiB, Build allocated %d MiB in all", len(entries), len(der)>>20, total>>20)
	if total >= 128<<20 {
		t.Errorf("Build allocated %d MiB for %d entries; want under 128 MiB", total>>20, len(entries))
	}
}

package revoke_test

import (
	"crypto/rand"
	"crypto/x509"
	"fmt"
	"math/big"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"minica/internal/testca"
	"minica/revoke"
)

// heapSampler records the largest heap seen while it runs, above the heap
// at start, garbage not yet collected included. Sampling every millisecond
// can miss a short peak, so the figure is a lower bound.
type heapSampler struct {
	stop chan struct{}
	done sync.WaitGroup
	base uint64
	peak uint64
}

func startHeapSampler() *heapSampler {
	runtime.GC()
	s := &heapSampler{stop: make(chan struct{})}
	s.base = heapBytes()
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			s.peak = max(s.peak, heapBytes())
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// Stop returns the peak growth in MiB.
func (s *heapSampler) Stop() float64 {
	close(s.stop)
	s.done.Wait()
	s.peak = max(s.peak, heapBytes())
	if s.peak < s.base {
		return 0
	}
	return float64(s.peak-s.base) / (1 << 20)
}

// peakHeap runs f once from a collected heap and returns its peak heap
// growth in MiB.
func peakHeap(f func()) float64 {
	s := startHeapSampler()
	f()
	return s.Stop()
}

func heapBytes() uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

func BenchmarkBuild(b *testing.B) {
	ca := newCA(b, "Bench Root", testca.NewKey(b), testNow)
	for _, n := range []int{1_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			p := revoke.Params{Issuer: ca.Cert, Signer: ca.Key, Number: big.NewInt(1),
				ThisUpdate: testNow, NextUpdate: testNow.Add(7 * 24 * time.Hour)}
			b.ReportAllocs()
			size := 0
			build := func() {
				der, err := revoke.Build(p, streamEntries(n, testNow))
				if err != nil {
					b.Fatal(err)
				}
				size = len(der)
			}
			for b.Loop() {
				build()
			}
			b.ReportMetric(peakHeap(build), "peak-heap-MiB")
			b.ReportMetric(float64(size)/(1<<20), "crl-MiB")
		})
	}
}

// BenchmarkBuildStdlib is x509.CreateRevocationList on the same input, for
// the ratio; the conversion of the entries is part of what a caller pays.
func BenchmarkBuildStdlib(b *testing.B) {
	ca := newCA(b, "Bench Root", testca.NewKey(b), testNow)
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			build := func() {
				_, err := x509.CreateRevocationList(rand.Reader, &x509.RevocationList{
					Number: big.NewInt(1), ThisUpdate: testNow, NextUpdate: testNow.Add(7 * 24 * time.Hour),
					RevokedCertificateEntries: stdlibEntries(synthEntries(n, testNow)),
				}, ca.Cert, ca.Key)
				if err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				build()
			}
			b.ReportMetric(peakHeap(build), "peak-heap-MiB")
		})
	}
}

func BenchmarkParseCRL(b *testing.B) {
	ca := newCA(b, "Bench Root", testca.NewKey(b), testNow)
	for _, n := range []int{1_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			der := synthCRL(b, ca, n)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := revoke.ParseCRL(der, ca.Cert); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkLookup(b *testing.B) {
	ca := newCA(b, "Bench Root", testca.NewKey(b), testNow)
	const n = 1_000_000
	der := synthCRL(b, ca, n)
	crl, err := revoke.ParseCRL(der, ca.Cert)
	if err != nil {
		b.Fatal(err)
	}
	// Every other probe is listed; the rest are random 128-bit serials.
	var probes []*big.Int
	i := 0
	for e := range synthEntries(n, testNow) {
		if i%1000 == 0 {
			probes = append(probes, e.Serial, testca.RandomSerial(b))
		}
		i++
	}
	b.ReportAllocs()
	hits := 0
	k := 0
	for b.Loop() {
		if crl.IsRevoked(probes[k%len(probes)]) {
			hits++
		}
		k++
	}
	if k >= len(probes) && hits < k/2-1 {
		b.Fatalf("%d hits in %d lookups; want half", hits, k)
	}
}

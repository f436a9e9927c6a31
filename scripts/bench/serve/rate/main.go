// Command rate is the fixed-rate OCSP client of scripts/bench/serve.sh: it
// POSTs the DER OCSP request in -body to URL at -rate requests a second for
// -d, open loop (each request is sent at its scheduled time, whatever the
// earlier ones do, so a slow server cannot slow the client down and hide its
// latency), and prints one line: requests, failures (transport errors and
// statuses but 200), and the latency median, p99 and max in milliseconds,
// measured from each request's scheduled time.
//
//	rate -body alice.req -rate 200 -d 10s [-close] URL
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"
)

func main() {
	bodyFile := flag.String("body", "", "the DER OCSP request to POST")
	rate := flag.Int("rate", 200, "requests a second")
	dur := flag.Duration("d", 10*time.Second, "how long to send")
	closeConns := flag.Bool("close", false, "a new connection for every request (for servers without keep-alive)")
	flag.Parse()
	if *bodyFile == "" || flag.NArg() != 1 || *rate < 1 || *rate > 100000 || *dur <= 0 || *dur > 10*time.Minute {
		fmt.Fprintln(os.Stderr, "rate: -body FILE, a URL, -rate between 1 and 100000 and -d up to 10m are required")
		os.Exit(2)
	}
	url := flag.Arg(0)
	body, err := os.ReadFile(*bodyFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rate:", err)
		os.Exit(1)
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableKeepAlives: *closeConns}}
	n := int(dur.Seconds() * float64(*rate))
	interval := time.Second / time.Duration(*rate)
	lat := make([]time.Duration, n)
	failed := make([]bool, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		at := start.Add(time.Duration(i) * interval)
		time.Sleep(time.Until(at))
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := client.Post(url, "application/ocsp-request", bytes.NewReader(body))
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("status %d", resp.StatusCode)
				}
			}
			lat[i] = time.Since(at)
			failed[i] = err != nil
		}()
	}
	wg.Wait()
	fails := 0
	for _, f := range failed {
		if f {
			fails++
		}
	}
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	rank := func(p float64) time.Duration { return lat[min(n-1, int(p*float64(n)+0.999)-1)] }
	fmt.Printf("%d\t%d\t%.2f\t%.2f\t%.2f\n", n, fails, ms(rank(0.5)), ms(rank(0.99)), ms(lat[n-1]))
}

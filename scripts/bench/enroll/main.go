// Command enroll is the client of scripts/bench/enroll.sh: it follows
// enrollment links as a browser would (GET the page, POST the form with a
// chosen password) and reports the latency of the downloads.
//
// Usage:
//
//	go run ./scripts/bench/enroll -links FILE -ca CA.crt [-n 100] [-format p12]
//
// FILE holds one link a line (the "url" of `minica enroll --json`). Each
// download's time is the POST's, from the request to the last byte of the
// bundle, on a kept-alive connection: the server's time plus a loopback
// round trip. It prints the count, p50, p90, p99 and max in milliseconds,
// tab-separated, and stops at the first failure.
package main

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"time"
)

var csrf = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func main() {
	links := flag.String("links", "", "file of enrollment links, one a line")
	caFile := flag.String("ca", "", "the CA certificate (PEM) that serve's HTTPS certificate chains to")
	n := flag.Int("n", 100, "downloads (at most the number of links)")
	format := flag.String("format", "p12", "p12, p12-compat or mobileconfig")
	flag.Parse()
	if err := run(*links, *caFile, *n, *format); err != nil {
		fmt.Fprintln(os.Stderr, "enroll:", err)
		os.Exit(1)
	}
}

func run(linksFile, caFile string, n int, format string) error {
	pemData, err := os.ReadFile(caFile)
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pemData) {
		return fmt.Errorf("no certificate in %s", caFile)
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	f, err := os.Open(linksFile)
	if err != nil {
		return err
	}
	defer f.Close()
	var times []time.Duration
	sc := bufio.NewScanner(f)
	for sc.Scan() && len(times) < n {
		link := sc.Text()
		resp, err := client.Get(link)
		if err != nil {
			return err
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := csrf.FindSubmatch(page)
		if resp.StatusCode != 200 || m == nil {
			return fmt.Errorf("GET %s: %s", link, resp.Status)
		}
		form := url.Values{"csrf": {string(m[1])}, "action": {"download"}, "format": {format},
			"password": {"a bench password"}, "password2": {"a bench password"}}
		start := time.Now()
		resp, err = client.PostForm(link, form)
		if err != nil {
			return err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		took := time.Since(start)
		if err != nil || resp.StatusCode != 200 || len(body) == 0 {
			return fmt.Errorf("POST %s: %s, %d bytes, %v", link, resp.Status, len(body), err)
		}
		times = append(times, took)
	}
	if len(times) < n {
		return fmt.Errorf("only %d links for %d downloads", len(times), n)
	}
	slices.Sort(times)
	q := func(p float64) float64 {
		return float64(times[min(len(times)-1, int(p*float64(len(times))))].Microseconds()) / 1000
	}
	fmt.Printf("%d\t%.1f\t%.1f\t%.1f\t%.1f\n", len(times), q(0.50), q(0.90), q(0.99), q(1))
	return nil
}

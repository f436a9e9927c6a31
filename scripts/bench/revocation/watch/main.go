// Command watch is the stopwatch of scripts/bench/revocation.sh. It checks
// that every URL lets a client certificate through, runs a command (the
// revocation), and then requests every URL concurrently, each request on a
// new connection (a full mTLS handshake), every -every until the URL
// refuses the client (a failed handshake or any status but 200). It prints
// one line: the Unix time in milliseconds when the command returned, the
// milliseconds the command took (from its start to its return), then the
// milliseconds from its return to the refusal by each URL, tab-separated, in
// the order given; -1 for a URL still letting the client through after
// -timeout (and exits 1). The time from the command's start to a refusal
// is the second field plus that URL's.
//
//	watch -ca ca.crt -cert c.crt -key c.key [-every 10ms] [-timeout 30s] -run 'minica revoke c' URL...
package main

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

func main() {
	caFile := flag.String("ca", "", "CA certificates (PEM) the servers' certificates chain to")
	certFile := flag.String("cert", "", "client certificate (PEM)")
	keyFile := flag.String("key", "", "client key (PEM)")
	every := flag.Duration("every", 10*time.Millisecond, "pause between two requests to one URL")
	timeout := flag.Duration("timeout", 30*time.Second, "give up on a URL after this long")
	run := flag.String("run", "", "the command to time (sh -c)")
	flag.Parse()
	urls := flag.Args()
	if *caFile == "" || *certFile == "" || *keyFile == "" || *run == "" || len(urls) == 0 {
		fmt.Fprintln(os.Stderr, "watch: -ca, -cert, -key, -run and at least one URL are required")
		os.Exit(2)
	}
	caPEM, err := os.ReadFile(*caFile)
	if err != nil {
		fail(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
	if err != nil {
		fail(err)
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}},
		DisableKeepAlives: true,
	}}
	for _, u := range urls {
		if !letThrough(client, u) {
			fail(fmt.Errorf("%s refuses the client before the command ran", u))
		}
	}

	cmd := exec.Command("sh", "-c", *run)
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	began := time.Now()
	if err := cmd.Run(); err != nil {
		fail(fmt.Errorf("running %q: %w", *run, err))
	}
	start := time.Now()
	took := make([]time.Duration, len(urls))
	var wg sync.WaitGroup
	for i, u := range urls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Since(start) < *timeout {
				if !letThrough(client, u) {
					took[i] = time.Since(start)
					return
				}
				time.Sleep(*every)
			}
			took[i] = -1
		}()
	}
	wg.Wait()
	fields := []string{fmt.Sprint(start.UnixMilli()), ms(start.Sub(began))}
	code := 0
	for _, d := range took {
		if d < 0 {
			fields = append(fields, "-1")
			code = 1
			continue
		}
		fields = append(fields, ms(d))
	}
	fmt.Println(strings.Join(fields, "\t"))
	os.Exit(code)
}

// ms formats d in milliseconds with one decimal.
func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d.Microseconds())/1000) }

// letThrough reports whether url answers the client 200.
func letThrough(c *http.Client, url string) bool {
	resp, err := c.Get(url)
	if err != nil {
		return false
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "watch:", err)
	os.Exit(1)
}

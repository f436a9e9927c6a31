// Command rate is the OCSP load generator of scripts/bench/serve.sh. It
// POSTs the DER OCSP request in -body to URL, the same way to every server:
// one small HTTP/1.1 client on raw TCP connections, so that the client costs
// little next to the server (no net/http Transport, no allocation per
// request), and every answer is checked to be a 200 carrying a successful
// OCSP response (anything else is a failure).
//
// A connection is kept for the next request when the server allows it
// (HTTP/1.1 without "Connection: close"; `openssl ocsp` answers HTTP/1.0
// and closes), and a new one is opened otherwise; -close asks for a new
// connection for every request from every server.
//
// Two modes:
//
//	rate -body alice.req -c 16 -d 10s URL      closed loop: 16 clients, each sending its next request when the last is answered
//	rate -body alice.req -rate 200 -d 10s URL  open loop: a request every 5 ms, whatever the earlier ones do
//
// In the open loop each request is sent at its scheduled time, so that a slow
// server cannot slow the client down and hide its latency, and the latency
// is measured from that time. Both modes first run -warmup (1 s) the same
// way, unmeasured: connections are open and the server has answered once.
//
// It prints one line, tab-separated: requests, failures, requests a second,
// the latency median, p99 and max in milliseconds, and the client's own CPU
// time (user + system, getrusage) over the measured period in microseconds
// per request: what the load generator spends, to tell whether it, rather
// than the server, set the rate.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"
)

func main() {
	bodyFile := flag.String("body", "", "the DER OCSP request to POST")
	rate := flag.Int("rate", 0, "open loop: requests a second")
	conns := flag.Int("c", 0, "closed loop: clients sending one request at a time")
	dur := flag.Duration("d", 10*time.Second, "how long to measure")
	warmup := flag.Duration("warmup", time.Second, "how long to run unmeasured first")
	closeConns := flag.Bool("close", false, "a new connection for every request")
	flag.Parse()
	if *bodyFile == "" || flag.NArg() != 1 || (*rate > 0) == (*conns > 0) || *rate > 100000 || *conns > 1024 ||
		*dur <= 0 || *dur > 10*time.Minute || *warmup < 0 || *warmup > time.Minute {
		fmt.Fprintln(os.Stderr, "rate: -body FILE, a URL, either -rate (1 to 100000) or -c (1 to 1024), and -d up to 10m are required")
		os.Exit(2)
	}
	body, err := os.ReadFile(*bodyFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rate:", err)
		os.Exit(1)
	}
	cl, err := newClient(flag.Arg(0), body, *closeConns)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rate:", err)
		os.Exit(2)
	}
	var res result
	if *conns > 0 {
		res = closedLoop(cl, *conns, *warmup, *dur)
	} else {
		res = openLoop(cl, *rate, *warmup, *dur)
	}
	if len(res.lat) == 0 {
		fmt.Fprintln(os.Stderr, "rate: no request was answered")
		os.Exit(1)
	}
	slices.Sort(res.lat)
	n := len(res.lat)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	rank := func(p float64) time.Duration { return res.lat[min(n-1, max(0, int(p*float64(n)+0.999)-1))] }
	fmt.Printf("%d\t%d\t%.0f\t%.2f\t%.2f\t%.2f\t%.1f\n", n, res.failed, float64(n)/res.elapsed.Seconds(),
		ms(rank(0.5)), ms(rank(0.99)), ms(res.lat[n-1]), float64(res.cpu.Microseconds())/float64(n))
}

type result struct {
	lat     []time.Duration // of every request, failed ones too
	failed  int
	elapsed time.Duration
	cpu     time.Duration // the process's CPU time over the measured period
}

// cpuOver returns a channel that yields the CPU time used between from and
// to, measured at those times.
func cpuOver(from, to time.Time) <-chan time.Duration {
	c := make(chan time.Duration, 1)
	go func() {
		time.Sleep(time.Until(from))
		t0 := cpuTime()
		time.Sleep(time.Until(to))
		c <- cpuTime() - t0
	}()
	return c
}

// closedLoop runs c clients for warmup, then for d, and returns what the
// second period measured.
func closedLoop(cl *client, c int, warmup, d time.Duration) result {
	start := time.Now()
	measureFrom, end := start.Add(warmup), start.Add(warmup+d)
	cpu := cpuOver(measureFrom, end)
	parts := make([]result, c)
	var wg sync.WaitGroup
	for i := range parts {
		wg.Go(func() {
			var cn conn
			defer cn.close()
			p := &parts[i]
			p.lat = make([]time.Duration, 0, 1<<16)
			for {
				t0 := time.Now()
				if !t0.Before(end) {
					return
				}
				err := cl.do(&cn, t0.Add(5*time.Second))
				if t0.Before(measureFrom) {
					continue
				}
				p.lat = append(p.lat, time.Since(t0))
				if err != nil {
					p.failed++
				}
			}
		})
	}
	wg.Wait()
	var all result
	for _, p := range parts {
		all.lat = append(all.lat, p.lat...)
		all.failed += p.failed
	}
	all.elapsed, all.cpu = d, <-cpu
	return all
}

// openLoop sends rate requests a second for warmup, then for d, each on a
// connection of a pool (a new one when all are busy).
func openLoop(cl *client, rate int, warmup, d time.Duration) result {
	interval := time.Second / time.Duration(rate)
	skip := int(warmup / interval)
	n := skip + int(d/interval)
	lat := make([]time.Duration, n)
	failed := make([]bool, n)
	pool := make(chan *conn, 1024)
	var wg sync.WaitGroup
	start := time.Now()
	cpu := cpuOver(start.Add(time.Duration(skip)*interval), start.Add(time.Duration(n)*interval))
	for i := range n {
		at := start.Add(time.Duration(i) * interval)
		time.Sleep(time.Until(at))
		wg.Go(func() {
			var cn *conn
			select {
			case cn = <-pool:
			default:
				cn = &conn{}
			}
			err := cl.do(cn, at.Add(5*time.Second))
			lat[i], failed[i] = time.Since(at), err != nil
			select {
			case pool <- cn:
			default:
				cn.close()
			}
		})
	}
	wg.Wait()
	for len(pool) > 0 {
		(<-pool).close()
	}
	res := result{lat: lat[skip:], elapsed: d, cpu: <-cpu}
	for _, f := range failed[skip:] {
		if f {
			res.failed++
		}
	}
	return res
}

// client sends one fixed request.
type client struct {
	addr  string
	req   []byte // the whole HTTP request
	close bool
}

func newClient(rawURL string, body []byte, forceClose bool) (*client, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("%q is not an http:// URL", rawURL)
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/ocsp-request\r\nContent-Length: %d\r\n", path, u.Host, len(body))
	if forceClose {
		b.WriteString("Connection: close\r\n")
	}
	b.WriteString("\r\n")
	b.Write(body)
	return &client{addr: u.Host, req: b.Bytes(), close: forceClose}, nil
}

// conn is a connection kept between requests, or none.
type conn struct {
	c  net.Conn
	br *bufio.Reader
}

func (cn *conn) close() {
	if cn.c != nil {
		cn.c.Close()
		cn.c = nil
	}
}

// do sends the request on cn (dialling when it has no connection) and reads
// the answer by deadline. It keeps the connection when the server allows.
func (cl *client) do(cn *conn, deadline time.Time) error {
	if cn.c == nil {
		c, err := net.DialTimeout("tcp", cl.addr, time.Until(deadline))
		if err != nil {
			return err
		}
		cn.c = c
		if cn.br == nil {
			cn.br = bufio.NewReaderSize(c, 4096)
		} else {
			cn.br.Reset(c)
		}
	}
	keep, err := cl.exchange(cn, deadline)
	if err != nil || !keep || cl.close {
		cn.close()
	}
	return err
}

var errNotOCSP = errors.New("not a successful OCSP response")

func (cl *client) exchange(cn *conn, deadline time.Time) (keep bool, err error) {
	cn.c.SetDeadline(deadline)
	if _, err := cn.c.Write(cl.req); err != nil {
		return false, err
	}
	line, err := cn.br.ReadSlice('\n')
	if err != nil {
		return false, err
	}
	// "HTTP/1.1 200 OK"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || string(line[9:12]) != "200" {
		return false, fmt.Errorf("status line %q", bytes.TrimSpace(line))
	}
	keep = line[7] == '1'
	length := -1
	for {
		h, err := cn.br.ReadSlice('\n')
		if err != nil {
			return false, err
		}
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			break
		}
		name, value, _ := bytes.Cut(h, []byte(":"))
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(value)); err != nil || length < 0 || length > 1<<20 {
				return false, fmt.Errorf("content length %q", value)
			}
		case bytes.EqualFold(name, []byte("Connection")):
			keep = bytes.EqualFold(value, []byte("keep-alive"))
		}
	}
	var head [16]byte
	var got []byte
	if length < 0 { // the body ends with the connection
		all, err := io.ReadAll(cn.br)
		if err != nil {
			return false, err
		}
		got, keep = all, false
	} else {
		k := min(length, len(head))
		if _, err := io.ReadFull(cn.br, head[:k]); err != nil {
			return false, err
		}
		if _, err := cn.br.Discard(length - k); err != nil {
			return false, err
		}
		got = head[:k]
	}
	if !successful(got) {
		return keep, errNotOCSP
	}
	return keep, nil
}

// successful reports whether b starts an OCSPResponse whose status is
// successful (0) and which has responseBytes: SEQUENCE { ENUMERATED 0, [0] }.
func successful(b []byte) bool {
	if len(b) < 2 || b[0] != 0x30 {
		return false
	}
	i := 2
	if b[1]&0x80 != 0 {
		i += int(b[1] & 0x7f)
	}
	return len(b) >= i+4 && b[i] == 0x0a && b[i+1] == 0x01 && b[i+2] == 0x00 && b[i+3] == 0xa0
}

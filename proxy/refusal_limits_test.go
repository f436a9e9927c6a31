package proxy

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// In page mode a client without a certificate that starts a request body
// and then trickles it cannot hold its connection (and its --max-conns
// slot) past BodyTimeout: the proxy does not wait for the body of a
// request it refuses. Nor can a valid client refused by the rules, in
// alert mode.
func TestRefusedSlowBodyIsBounded(t *testing.T) {
	for _, mode := range RefusalModes {
		t.Run(mode, func(t *testing.T) {
			var reached atomic.Int32
			e := newEnv(t, func(c *Config) {
				c.Refusal = mode
				c.BodyTimeout = 300 * time.Millisecond
				c.AllowCN = []string{"good"}
			})
			e.upstream.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached.Add(1) })
			cert, key := e.ca.Client(t, "otto") // not allowed
			if mode == RefusalPage {
				cert, key = nil, nil // no certificate at all
			}
			for _, accept := range []string{"text/html", "*/*"} {
				c := e.dialHTTP1(t, cert, key)
				_, err := io.WriteString(c, "POST / HTTP/1.1\r\nHost: localhost\r\nAccept: "+accept+"\r\nContent-Length: 100000\r\n\r\nsome=data")
				if err != nil {
					t.Fatal(err)
				}
				c.SetReadDeadline(time.Now().Add(10 * time.Second))
				start := time.Now()
				br := bufio.NewReader(c)
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatalf("Accept %s: no answer: %v", accept, err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if want := map[string]int{RefusalAlert: 403, RefusalPage: 496}[mode]; resp.StatusCode != want {
					t.Errorf("Accept %s: status %d; want %d", accept, resp.StatusCode, want)
				}
				_, err = br.ReadByte()
				if err == nil || strings.Contains(err.Error(), "timeout") {
					t.Errorf("Accept %s: the connection stayed open %v with its body unsent (%v); want it closed after BodyTimeout", accept, time.Since(start).Round(time.Millisecond), err)
				}
			}
			if n := reached.Load(); n != 0 {
				t.Errorf("the upstream got %d requests of a refused client", n)
			}
		})
	}
}

// Package dnstest is a DNS server for tests: UDP on 127.0.0.1, A and TXT
// records from maps the test may change, NXDOMAIN for other names.
package dnstest

import (
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// Zone is what a Server answers: A records of names, TXT records of
// names, NXDOMAIN for any other name. Names are without the final dot, in
// lower case.
type Zone struct {
	A   map[string]netip.Addr
	TXT map[string][]string
}

// Server is a running DNS server; SetTXT changes its TXT records.
type Server struct {
	Addr string // "127.0.0.1:PORT"
	mu   sync.Mutex
	zone Zone
}

// SetTXT sets the TXT records of name (none when txt is empty).
func (s *Server) SetTXT(name string, txt ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.zone.TXT == nil {
		s.zone.TXT = map[string][]string{}
	}
	s.zone.TXT[name] = txt
}

// Start serves z until the test ends.
func Start(t testing.TB, z Zone) *Server {
	t.Helper()
	s := &Server{zone: z}
	pc := listenUDP(t)
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if out, err := s.answer(buf[:n]); err == nil {
				pc.WriteTo(out, from)
			}
		}
	}()
	s.Addr = pc.LocalAddr().String()
	return s
}

// StartSilent is a DNS server that reads queries and never answers; it
// returns its "host:port".
func StartSilent(t testing.TB) string {
	t.Helper()
	pc := listenUDP(t)
	go func() {
		buf := make([]byte, 1500)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
		}
	}()
	return pc.LocalAddr().String()
}

func listenUDP(t testing.TB) net.PacketConn {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	return pc
}

func (s *Server) answer(query []byte) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.zone
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, err
	}
	q, err := p.Question()
	if err != nil {
		return nil, err
	}
	name := strings.ToLower(strings.TrimSuffix(q.Name.String(), "."))
	_, hasA := d.A[name]
	_, hasTXT := d.TXT[name]
	rcode := dnsmessage.RCodeSuccess
	if !hasA && !hasTXT {
		rcode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RCode: rcode})
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(q); err != nil {
		return nil, err
	}
	if err := b.StartAnswers(); err != nil {
		return nil, err
	}
	rh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}
	switch {
	case q.Type == dnsmessage.TypeA && hasA:
		err = b.AResource(rh, dnsmessage.AResource{A: d.A[name].As4()})
	case q.Type == dnsmessage.TypeTXT && hasTXT:
		for _, txt := range d.TXT[name] {
			if err = b.TXTResource(rh, dnsmessage.TXTResource{TXT: []string{txt}}); err != nil {
				break
			}
		}
	}
	if err != nil {
		return nil, err
	}
	return b.Finish()
}

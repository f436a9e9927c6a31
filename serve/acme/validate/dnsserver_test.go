package validate

import (
	"net"
	"net/netip"
	"strings"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// testDNS is a UDP DNS server on 127.0.0.1 for the tests: A records of
// names, TXT records of names, NXDOMAIN for any other name. Names are
// without the final dot, in lower case.
type testDNS struct {
	a   map[string]netip.Addr
	txt map[string][]string
}

// startDNS serves d until the test ends and returns its "host:port".
func startDNS(t *testing.T, d testDNS) string {
	t.Helper()
	pc := listenUDP(t)
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if out, err := d.answer(buf[:n]); err == nil {
				pc.WriteTo(out, from)
			}
		}
	}()
	return pc.LocalAddr().String()
}

// startSilentDNS is a DNS server that reads queries and never answers.
func startSilentDNS(t *testing.T) string {
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

func listenUDP(t *testing.T) net.PacketConn {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	return pc
}

func (d testDNS) answer(query []byte) ([]byte, error) {
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
	_, hasA := d.a[name]
	_, hasTXT := d.txt[name]
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
		err = b.AResource(rh, dnsmessage.AResource{A: d.a[name].As4()})
	case q.Type == dnsmessage.TypeTXT && hasTXT:
		for _, txt := range d.txt[name] {
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

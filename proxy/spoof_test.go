package proxy

import (
	"bufio"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"minica/identity"
)

func TestSpoofingMatrix(t *testing.T) {
	spoofed := []string{
		"X-SSL-Client-CN", "x-ssl-client-cn", "X_SSL_CLIENT_CN", "x_ssl_client_dn", "X-SSL-Client-Verify",
		"X-SSL-Client-S-DN", "X-SSL-Client-S-DN-CN", "X_SSL_CLIENT_S_DN_Email", "X-SSL-Client-M-Serial",
		"X-SSL-Client-Escaped-Cert", "X-SSL-Client-Fingerprint", "X-Forwarded-Client-Cert", "x_forwarded_client_cert",
		"Client-Cert", "Client-Cert-Chain", "client_cert", "Forwarded", "X-Forwarded-For", "X-Forwarded-Host",
		"X-Forwarded-Proto", "X_Forwarded_For", "X-Forwarded-Port", "X-User", "x_user",
	}
	for _, profile := range identity.Profiles {
		eachProtocol(t, profile+"/", func(t *testing.T, h2 bool) {
			e := newEnv(t, func(c *Config) { c.Profile = profile; c.CustomHeaders = []string{"X-User=email"} })
			cert, key := e.ca.Leaf(t, aliceTemplate())
			hdr := http.Header{}
			for _, n := range spoofed {
				hdr[n] = []string{"spoof"}
			}
			// A client naming identity headers in Connection must not
			// be able to remove them.
			if !h2 {
				hdr["Connection"] = []string{"X-SSL-Client-CN, X-User, X-SSL-Client-S-DN, Client-Cert, X-Forwarded-Client-Cert, X-Forwarded-For"}
			}
			c := e.client(cert, key, h2)
			if code, _ := e.get(c, "/", hdr); code != 200 {
				t.Fatalf("status = %d; want 200", code)
			}
			got := e.lastReq.Load()
			for k, vs := range got.Header {
				for _, v := range vs {
					if strings.Contains(v, "spoof") {
						t.Errorf("upstream got %s: %q", k, v)
					}
				}
			}
			want := map[string]string{
				"X-User":            "alice@example.com",
				"X-Forwarded-For":   "127.0.0.1",
				"X-Forwarded-Proto": "https",
				"X-Forwarded-Host":  e.addr,
			}
			hs, _ := identity.NewHeaders(profile, nil)
			id, _ := identity.New(cert, nil)
			for _, h := range hs.Render(id) {
				if h.Name != "Client-Cert-Chain" {
					want[h.Name] = h.Value
				}
			}
			for k, v := range want {
				if g := got.Header.Get(k); g != v {
					t.Errorf("upstream %s = %q; want %q", k, g, v)
				}
			}
		})
	}
}

// aliceTemplate is a client certificate template with an email, O and OU.
func aliceTemplate() *x509.Certificate {
	return &x509.Certificate{
		Subject:        pkix.Name{CommonName: "alice", Organization: []string{"Acme"}, OrganizationalUnit: []string{"Ops"}},
		EmailAddresses: []string{"alice@example.com"},
		DNSNames:       []string{"alice.example.com"},
		KeyUsage:       x509.KeyUsageDigitalSignature,
		ExtKeyUsage:    []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
}

func TestSpoofedTrailersAreDropped(t *testing.T) {
	e := newEnv(t, nil)
	seen := make(chan http.Header, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		seen <- r.Trailer
	}))
	defer up.Close()
	e2 := newEnvWithUpstream(t, e, up.URL)
	cert, key := e.ca.Client(t, "alice")
	c := e2.dialHTTP1(t, cert, key)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\nTrailer: X-SSL-Client-CN, X-Other\r\n\r\n"+
		"4\r\nbody\r\n0\r\nX-SSL-Client-CN: spoof\r\nX-Other: fine\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status = %d; want 200", resp.StatusCode)
	}
	tr := <-seen
	if v, ok := tr["X-Ssl-Client-Cn"]; ok {
		t.Errorf("upstream got trailer X-Ssl-Client-Cn: %q", v)
	}
	if _, ok := tr["X-Other"]; !ok {
		t.Errorf("trailers %v lack the declared X-Other", tr)
	}
}

package validate

import (
	"context"
	"fmt"
	"minica/serve/acme/internal/dnstest"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const (
	token   = "LoqXcYV8q5ONbJQxbmR7SCTNo3tiAXDfowyjxAjEuX0"
	keyAuth = token + ".9jg46WB3rR_AHD-EBXdN7cBkH1WOu0tA3M9fm21mqTI"
	path    = "/.well-known/acme-challenge/" + token
)

var (
	localhost = Identifier{"ip", "127.0.0.1"}
	allowLo   = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
)

// startHTTP serves h on 127.0.0.1 until the test ends and returns its port.
func startHTTP(t *testing.T, h http.HandlerFunc) int {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return port(t, srv.Listener)
}

func port(t *testing.T, l net.Listener) int {
	t.Helper()
	return int(netip.MustParseAddrPort(l.Addr().String()).Port())
}

// answer serves keyAuth with a trailing newline at the challenge path.
func answer(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != path {
		http.NotFound(w, r)
		return
	}
	fmt.Fprintln(w, keyAuth)
}

func TestHTTP01(t *testing.T) {
	// The https side of a redirect: the same path, on the TLS port.
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(answer))
	t.Cleanup(tlsSrv.Close)
	tlsPort := port(t, tlsSrv.Listener)

	tests := []struct {
		name    string
		handler http.HandlerFunc
		wantErr string // "type: detail", "" when valid
	}{
		{name: "valid", handler: answer},
		{name: "wrong body",
			handler: func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "other.key") },
			wantErr: `incorrectResponse: http://127.0.0.1:PORT` + path + ` answered "other.key"; want the key authorization "` + keyAuth + `"`},
		{name: "not found",
			handler: http.NotFound,
			wantErr: `unauthorized: http://127.0.0.1:PORT` + path + ` answered "404 Not Found"; want 200 OK`},
		{name: "redirect to another path",
			handler: func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == path {
					http.Redirect(w, r, "/elsewhere", http.StatusFound)
					return
				}
				fmt.Fprint(w, keyAuth)
			}},
		{name: "redirect to https on the TLS port",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, fmt.Sprintf("https://127.0.0.1:%d%s", tlsPort, path), http.StatusMovedPermanently)
			}},
		{name: "redirect loop",
			handler: func(w http.ResponseWriter, r *http.Request) {
				to := map[string]string{path: "/a", "/a": path}[r.URL.Path]
				http.Redirect(w, r, to, http.StatusFound)
			},
			wantErr: "connection: http://127.0.0.1:PORT/a redirects to http://127.0.0.1:PORT" + path + ", a loop"},
		{name: "too many redirects",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, r.URL.Path+"x", http.StatusFound)
			},
			wantErr: "connection: http://127.0.0.1:PORT" + path + "xxx redirects to http://127.0.0.1:PORT" + path + "xxxx: more than 3 redirects"},
		{name: "redirect to another port",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "http://127.0.0.1:8080"+path, http.StatusFound)
			},
			wantErr: "redirects to http://127.0.0.1:8080" + path + ": port 8080; want http on port PORT only"},
		{name: "redirect to https on the http port",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "https://"+r.Host+path, http.StatusFound)
			},
			wantErr: "connection: http://127.0.0.1:PORT" + path + " redirects to https://127.0.0.1:PORT" + path + ": port PORT; want https on port"},
		{name: "redirect to another scheme",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "ftp://127.0.0.1/x", http.StatusFound)
			},
			wantErr: "redirects to ftp://127.0.0.1/x: want an http or https URL"},
		{name: "redirect to the metadata address",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "http://169.254.169.254:"+portOf(r)+"/latest/meta-data/", http.StatusFound)
			},
			wantErr: "rejectedIdentifier: fetching http://169.254.169.254:PORT/latest/meta-data/: connection to 169.254.169.254:PORT refused: 169.254.169.254 is in the refused range 169.254.0.0/16"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startHTTP(t, tt.handler)
			v := mustNew(t, Config{HTTPPort: p, TLSPort: tlsPort, Allow: allowLo, MaxRedirects: 3})
			err := v.HTTP01(context.Background(), localhost, token, keyAuth)
			want := strings.ReplaceAll(tt.wantErr, "PORT", fmt.Sprint(p))
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), want)) {
				t.Fatalf("HTTP01() = %v; want %q", err, want)
			}
		})
	}
}

// startSilentTCP accepts connections on 127.0.0.1, holds them open and
// never writes, until the test ends; it returns the port.
func startSilentTCP(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	held := make(chan net.Conn, 8)
	t.Cleanup(func() {
		l.Close()
		for len(held) > 0 {
			(<-held).Close()
		}
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			held <- c
		}
	}()
	return port(t, l)
}

func portOf(r *http.Request) string {
	_, p, _ := net.SplitHostPort(r.Host)
	return p
}

// TestHTTP01HugeBody serves 1 GiB: the validator must stop after
// MaxBody+1 bytes, so the test ends long before the body would.
func TestHTTP01HugeBody(t *testing.T) {
	var sent atomic.Int64
	p := startHTTP(t, func(w http.ResponseWriter, r *http.Request) {
		zeros := make([]byte, 32<<10)
		for sent.Load() < 1<<30 {
			n, err := w.Write(zeros)
			sent.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	v := mustNew(t, Config{HTTPPort: p, Allow: allowLo})
	err := v.HTTP01(context.Background(), localhost, token, keyAuth)
	wantError(t, err, TypeIncorrectResponse, "answered more than 8192 bytes")
}

// TestHTTP01NoAnswer is a server that accepts and never answers: the
// validation ends when Total runs out.
func TestHTTP01NoAnswer(t *testing.T) {
	v := mustNew(t, Config{HTTPPort: startSilentTCP(t), Allow: allowLo, Total: 500 * time.Millisecond})
	start := time.Now()
	err := v.HTTP01(context.Background(), localhost, token, keyAuth)
	wantError(t, err, TypeConnection, "no answer within the validation's time limit of 500ms")
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Errorf("HTTP01 took %v; want about 500ms", d)
	}
}

// TestHTTP01Refused: addresses of the refused ranges fail with
// rejectedIdentifier before a connection is made, whether given as the
// identifier or answered by DNS for a name.
func TestHTTP01Refused(t *testing.T) {
	dns := dnstest.Start(t, dnstest.Zone{A: map[string]netip.Addr{
		"metadata.test": netip.MustParseAddr("169.254.169.254"),
		"lo.test":       netip.MustParseAddr("127.0.0.1"),
	}})
	p := startHTTP(t, answer)
	tests := []struct {
		name    string
		id      Identifier
		wantErr string
	}{
		{"loopback without Allow", localhost, "connection to 127.0.0.1:PORT refused: 127.0.0.1 is in the refused range 127.0.0.0/8"},
		{"metadata address", Identifier{"ip", "169.254.169.254"}, "connection to 169.254.169.254:PORT refused"},
		{"mapped metadata address", Identifier{"ip", "::ffff:169.254.169.254"}, "connection to 169.254.169.254:PORT refused"},
		{"name of the metadata address", Identifier{"dns", "metadata.test"}, "connection to 169.254.169.254:PORT refused"},
		{"name of loopback", Identifier{"dns", "lo.test"}, "connection to 127.0.0.1:PORT refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := mustNew(t, Config{HTTPPort: p, Resolver: dns.Addr, Total: time.Second})
			err := v.HTTP01(context.Background(), tt.id, token, keyAuth)
			wantError(t, err, TypeRejectedIdentifier, strings.ReplaceAll(tt.wantErr, "PORT", fmt.Sprint(p)))
		})
	}
}

func TestHTTP01Name(t *testing.T) {
	dns := dnstest.Start(t, dnstest.Zone{A: map[string]netip.Addr{"acme.test": netip.MustParseAddr("127.0.0.1")}})
	p := startHTTP(t, func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.Host, "acme.test:") {
			http.Error(w, "wrong Host "+r.Host, http.StatusBadRequest)
			return
		}
		answer(w, r)
	})
	v := mustNew(t, Config{HTTPPort: p, Resolver: dns.Addr, Allow: allowLo, Total: time.Second})
	if err := v.HTTP01(context.Background(), Identifier{"dns", "acme.test"}, token, keyAuth); err != nil {
		t.Fatalf("HTTP01(acme.test) = %v; want nil", err)
	}
	err := v.HTTP01(context.Background(), Identifier{"dns", "missing.test"}, token, keyAuth)
	wantError(t, err, TypeDNS, "missing.test.: no such name")
}

func TestHTTP01BadToken(t *testing.T) {
	v := mustNew(t, Config{})
	err := v.HTTP01(context.Background(), localhost, "../../etc/passwd", keyAuth)
	wantError(t, err, TypeMalformed, `http-01 token "../../etc/passwd": want base64url characters only`)
}

package serverconf

import (
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata with the actual output")

// golden compares got with testdata/NAME.golden, or writes it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	file := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s (run go test -update to accept it):\n%s", name, file, diff(string(want), got))
	}
}

// diff shows the first line where want and got differ.
func diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\nwant: %s\n got: %s", i+1, wl, gl)
		}
	}
	return ""
}

// testCA is the CA of a test: its directory, server certificate and lifetime.
type testCA struct {
	dir, name, serial, serverName string
	lifetime                      time.Duration
}

var (
	mainCA  = testCA{"/srv/minica", "web", "0123456789abcdef0123456789abcdef", "app.example.com", 7 * 24 * time.Hour}
	spaceCA = testCA{"/srv/my ca", "api.example.com", "00112233445566778899aabbccddeeff", "api.example.com", 7 * 24 * time.Hour}
	shortCA = testCA{"/srv/short", "web", "fedcba9876543210fedcba9876543210", "app.example.com", 24 * time.Hour}
)

// front is the Front of c's server certificate, as cmd/minica fills it.
func (c testCA) front(t *testing.T, upstream, listen string) *Front {
	t.Helper()
	up, err := ParseUpstream(upstream)
	if err != nil {
		t.Fatal(err)
	}
	addr, port, err := ParseListen(listen)
	if err != nil {
		t.Fatal(err)
	}
	leaf := c.dir + "/certs/" + c.name + "/" + c.serial
	return &Front{
		Dir: c.dir, Name: c.name, Serial: c.serial, NotAfter: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC),
		CertFile: leaf + ".crt", ChainFile: leaf + ".chain.pem", KeyFile: leaf + ".key",
		CAFile: c.dir + "/chain.pem", CRLFile: c.dir + "/crl.pem", Depth: 1,
		ListenAddr: addr, ListenPort: port, ServerName: c.serverName, Upstream: up, CRLLifetime: c.lifetime,
	}
}

func (c testCA) job(server, minica, password string) *Job {
	return &Job{Server: server, Minica: minica, Dir: c.dir, PasswordFile: password, CRLLifetime: c.lifetime}
}

func TestWebGolden(t *testing.T) {
	for _, server := range WebServers {
		fronts := map[string]*Front{
			"default": mainCA.front(t, "http://127.0.0.1:8080", "443"),
			"addr":    mainCA.front(t, "127.0.0.1:8080", "127.0.0.1:8443"),
			"ipv6":    mainCA.front(t, "http://[::1]:9000/", "[::1]:443"),
			"space":   spaceCA.front(t, "http://app.internal", ":8443"),
		}
		fronts["addr"].ServerName = "web.internal"
		inter := mainCA.front(t, "http://127.0.0.1:8080", "443")
		inter.Depth = 2
		inter.CRLFile = mainCA.dir + "/crl-chain.pem"
		fronts["intermediate"] = inter
		for name, f := range fronts {
			t.Run(server+"."+name, func(t *testing.T) {
				got, err := Web(server, f)
				if err != nil {
					t.Fatal(err)
				}
				golden(t, server+"."+name, got)
			})
		}
	}
}

func TestJobGolden(t *testing.T) {
	const bin = "/usr/local/bin/minica"
	jobs := map[string]*Job{
		"space": spaceCA.job(Nginx, "/opt/mini ca/minica", "/etc/minica/pw"),
		"short": shortCA.job(HAProxy, bin, ""),
	}
	for _, s := range JobServers {
		jobs[s] = mainCA.job(s, bin, "")
	}
	for name, j := range jobs {
		t.Run("cron."+name, func(t *testing.T) {
			got, err := Cron(j)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "cron."+name, got)
		})
	}
	jobs["short"] = shortCA.job(Apache, bin, "")
	delete(jobs, "space")
	for name, j := range jobs {
		t.Run("systemd."+name, func(t *testing.T) {
			got, err := Systemd(j)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "systemd."+name, got)
		})
	}
}

func TestSystemdProxyGolden(t *testing.T) {
	const bin = "/usr/local/bin/minica"
	tests := []struct {
		name string
		f    *Front
		j    *Job
	}{
		{"default", mainCA.front(t, "http://127.0.0.1:8080", "443"), mainCA.job(Proxy, bin, "")},
		{"addr", shortCA.front(t, "127.0.0.1:8080", "127.0.0.1:8443"), shortCA.job(Proxy, bin, "")},
		{"space", spaceCA.front(t, "http://[::1]:9000", "[::1]:443"), spaceCA.job(Proxy, bin, "/etc/minica/pw")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SystemdProxy(tt.f, tt.j)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "systemd-proxy."+tt.name, got)
		})
	}
}

// TestIdentityHeaders checks that the front ends set the headers of
// setHeaders, all of them names of the proxy's minica profile, and remove
// every other name of the profile in both spellings.
func TestIdentityHeaders(t *testing.T) {
	names, err := identityHeaders()
	if err != nil {
		t.Fatal(err)
	}
	want := "X-SSL-Client-CN X-SSL-Client-Email X-SSL-Client-DN X-SSL-Client-Serial X-SSL-Client-Verify " +
		"X-SSL-Client-Fingerprint X-SSL-Client-Not-After X-SSL-Client-Cert"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("identityHeaders() = %s; want %s", got, want)
	}
	f := mainCA.front(t, "http://127.0.0.1:8080", "443")
	setPrefix := map[string]string{Nginx: "proxy_set_header ", Apache: "RequestHeader set ", HAProxy: "http-request set-header "}
	unsetLine := map[string]string{Nginx: `proxy_set_header %s "";`, Apache: "RequestHeader unset %s early", HAProxy: "http-request del-header %s"}
	for _, server := range WebServers {
		out, err := Web(server, f)
		if err != nil {
			t.Fatal(err)
		}
		var set []string
		for _, line := range strings.Split(out, "\n") {
			line = strings.TrimSpace(line)
			if rest, ok := strings.CutPrefix(line, setPrefix[server]); ok && !strings.HasSuffix(rest, `"";`) {
				if h := strings.Fields(rest)[0]; strings.HasPrefix(h, "X-SSL-Client-") && (len(set) == 0 || set[len(set)-1] != h) {
					set = append(set, h)
				}
			}
		}
		if got := strings.Join(set, " "); got != strings.Join(setHeaders, " ") {
			t.Errorf("%s sets %s; want %s", server, got, strings.Join(setHeaders, " "))
		}
		unset := names[len(setHeaders):]
		if server != Nginx {
			unset = names
			for _, n := range names {
				unset = append(unset, strings.ReplaceAll(n, "-", "_"))
			}
		}
		for _, n := range unset {
			if line := strings.Replace(unsetLine[server], "%s", n, 1); !strings.Contains(out, "\n"+indent(server)+line+"\n") {
				t.Errorf("%s does not remove %s (%q)", server, n, line)
			}
		}
	}
}

func indent(server string) string {
	if server == Nginx {
		return "        "
	}
	return "    "
}

func TestFrontCheck(t *testing.T) {
	tests := []struct {
		name    string
		mod     func(*Front)
		wantErr string
	}{
		{name: "relative dir", mod: func(f *Front) { f.Dir = "rel" }, wantErr: `the CA directory path "rel" is not absolute`},
		{name: "relative chain", mod: func(f *Front) { f.ChainFile = "rel/certs/web/1.chain.pem" }, wantErr: `the chain path "rel/certs/web/1.chain.pem" is not absolute`},
		{name: "relative CRL", mod: func(f *Front) { f.CRLFile = "crl.pem" }, wantErr: `the CRL file path "crl.pem" is not absolute`},
		{name: "no server name", mod: func(f *Front) { f.ServerName = "" }, wantErr: "the server certificate's name, serial and server name are required"},
		{name: "port 0", mod: func(f *Front) { f.ListenPort = 0 }, wantErr: "the listen port 0 is not from 1 to 65535"},
		{name: "https upstream", mod: func(f *Front) { f.Upstream = &url.URL{Scheme: "https", Host: "app:443"} }, wantErr: "the upstream https://app:443 is not http://HOST:PORT"},
		{name: "no upstream", mod: func(f *Front) { f.Upstream = nil }, wantErr: "the upstream <nil> is not http://HOST:PORT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mainCA.front(t, "http://127.0.0.1:8080", "443")
			tt.mod(f)
			for _, server := range WebServers {
				if _, err := Web(server, f); err == nil || err.Error() != tt.wantErr {
					t.Errorf("Web(%s) error = %v; want %q", server, err, tt.wantErr)
				}
			}
			if _, err := SystemdProxy(f, mainCA.job(Proxy, "/usr/bin/minica", "")); err == nil || err.Error() != tt.wantErr {
				t.Errorf("SystemdProxy() error = %v; want %q", err, tt.wantErr)
			}
		})
	}
	if _, err := Web("lighttpd", mainCA.front(t, "http://127.0.0.1:8080", "443")); err == nil || err.Error() != `unknown server "lighttpd": want nginx, apache or haproxy` {
		t.Errorf("Web(lighttpd) error = %v", err)
	}
}

func TestJobCheck(t *testing.T) {
	tests := []struct {
		name    string
		j       Job
		wantErr string
	}{
		{name: "unknown server", j: Job{Server: "lighttpd", Minica: "/bin/minica", Dir: "/ca", CRLLifetime: time.Hour}, wantErr: `unknown server "lighttpd": want nginx, apache, haproxy or proxy`},
		{name: "relative dir", j: Job{Server: Nginx, Minica: "/bin/minica", Dir: "rel", CRLLifetime: time.Hour}, wantErr: `the CA directory path "rel" is not absolute`},
		{name: "no dir", j: Job{Server: Nginx, Minica: "/bin/minica", CRLLifetime: time.Hour}, wantErr: `the CA directory path "" is not absolute`},
		{name: "relative minica", j: Job{Server: Nginx, Minica: "minica", Dir: "/ca", CRLLifetime: time.Hour}, wantErr: `the minica binary path "minica" is not absolute`},
		{name: "relative password", j: Job{Server: Nginx, Minica: "/bin/minica", Dir: "/ca", PasswordFile: "pw", CRLLifetime: time.Hour}, wantErr: `the password file path "pw" is not absolute`},
		{name: "short lifetime", j: Job{Server: Nginx, Minica: "/bin/minica", Dir: "/ca", CRLLifetime: 10 * time.Minute}, wantErr: "the CA's CRL lifetime 10m is too short for a scheduled job (at least 20m)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Cron(&tt.j); err == nil || err.Error() != tt.wantErr {
				t.Errorf("Cron() error = %v; want %q", err, tt.wantErr)
			}
			if _, err := Systemd(&tt.j); err == nil || err.Error() != tt.wantErr {
				t.Errorf("Systemd() error = %v; want %q", err, tt.wantErr)
			}
		})
	}
	f := mainCA.front(t, "http://127.0.0.1:8080", "443")
	if _, err := SystemdProxy(f, mainCA.job(Nginx, "/bin/minica", "")); err == nil || err.Error() != `the CRL job of a proxy reloads "proxy", not "nginx"` {
		t.Errorf("SystemdProxy(nginx job) error = %v", err)
	}
}

// TestWebHeaders: nginx and Apache set the headers of a proxy profile or of
// custom NAME=FIELD headers from their own variables, so that an app keeps
// the header names of the classic recipe (X_SSL_CLIENT_DN_CN), and say which
// they cannot produce.
func TestWebHeaders(t *testing.T) {
	classic := []string{"X_SSL_CLIENT_DN_Email=dn_email", "X_SSL_CLIENT_DN_CN=cn"}
	for _, server := range []string{Nginx, Apache} {
		for name, h := range map[string]struct {
			profile string
			custom  []string
		}{
			"classic": {"none", classic},
			"apache":  {"apache", nil},
			"nginx":   {"nginx", []string{"X-Client-Issuer=issuer_dn"}},
		} {
			t.Run(server+"."+name, func(t *testing.T) {
				f := mainCA.front(t, "http://127.0.0.1:8080", "443")
				f.HeaderProfile, f.CustomHeaders = h.profile, h.custom
				got, err := Web(server, f)
				if err != nil {
					t.Fatal(err)
				}
				golden(t, server+".headers-"+name, got)
			})
		}
	}
	tests := []struct {
		server, profile string
		custom          []string
		wantErr         string
	}{
		{Nginx, "", []string{"X-Fp=fingerprint"}, `nginx cannot produce the field "fingerprint" of header X-Fp; it can: cert, cn, dn, dn_email, email, fingerprint_sha1, issuer_dn, serial, verify`},
		{Apache, "", []string{"X-Uri=uri"}, `apache cannot produce the field "uri" of header X-Uri; it can: cn, dn, dn_email, email, issuer_dn, o, ou, serial, verify`},
		{Nginx, "envoy", nil, `unknown header profile "envoy"`},
		{Apache, "", []string{"X-Bad=nope"}, `unknown field "nope"`},
	}
	for _, tt := range tests {
		f := mainCA.front(t, "http://127.0.0.1:8080", "443")
		f.HeaderProfile, f.CustomHeaders = tt.profile, tt.custom
		if _, err := Web(tt.server, f); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("Web(%s, %q, %q) error = %v; want containing %q", tt.server, tt.profile, tt.custom, err, tt.wantErr)
		}
	}
}

//go:build interop

package servertest

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tomcatStartLimit bounds Tomcat's start: a JVM on a busy two-core machine.
const tomcatStartLimit = 90 * time.Second

// The webapp's pages: each says where it lives.
const (
	adminPage   = "ADMIN-SECRET"
	privatePage = "PRIVATE-SECRET"
	xPage       = "X-PAGE"
	rootPage    = "ROOT-PAGE"
)

// startTomcat runs Debian's Tomcat 10 (catalina.sh run) on 127.0.0.1:port
// with CATALINA_BASE in a new directory of the test and one static webapp,
// ROOT: /index.html, /x/index.html, /admin/ and /private/ (index.html and
// secret.txt each), all of whose pages name the directory. As root it runs
// as the user nobody. It is killed when the test ends.
func startTomcat(t *testing.T) (url string) {
	t.Helper()
	catalina := filepath.Join("/usr/share/tomcat10/bin", "catalina.sh")
	if p, err := exec.LookPath("catalina.sh"); err == nil {
		catalina = p
	} else if _, err := os.Stat(catalina); err != nil {
		t.Fatalf("catalina.sh is required: install the Debian package tomcat10")
	}
	home := filepath.Dir(filepath.Dir(catalina))
	webXML, err := os.ReadFile(filepath.Join(home, "etc", "web.xml")) // Debian's copy of conf/web.xml
	if err != nil {
		if webXML, err = os.ReadFile(filepath.Join(home, "conf", "web.xml")); err != nil {
			t.Fatalf("Tomcat's default web.xml: %v: install the Debian package tomcat10", err)
		}
	}
	dir := t.TempDir()
	// Tomcat, as nobody when run as root, must reach its base.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	base := filepath.Join(dir, "tomcat")
	port := freePort(t)
	files := map[string]string{
		"conf/web.xml": string(webXML),
		"conf/server.xml": fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<Server port="-1" shutdown="SHUTDOWN">
  <Service name="Catalina">
    <Connector address="127.0.0.1" port="%s" protocol="HTTP/1.1" connectionTimeout="10000"/>
    <Engine name="Catalina" defaultHost="localhost">
      <Host name="localhost" appBase="webapps" unpackWARs="false" autoDeploy="false"/>
    </Engine>
  </Service>
</Server>
`, port),
		"webapps/ROOT/index.html":         rootPage,
		"webapps/ROOT/x/index.html":       xPage,
		"webapps/ROOT/admin/index.html":   adminPage,
		"webapps/ROOT/admin/secret.txt":   adminPage,
		"webapps/ROOT/private/index.html": privatePage,
		"webapps/ROOT/private/secret.txt": privatePage,
		"logs/.keep":                      "", "temp/.keep": "", "work/.keep": "",
	}
	for name, body := range files {
		p := filepath.Join(base, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, p, body)
	}
	cmd := exec.Command(catalina, "run")
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"CATALINA_HOME=" + home,
		"CATALINA_BASE=" + base,
		"CATALINA_TMPDIR=" + filepath.Join(base, "temp"),
		// No hsperfdata file in /tmp: everything stays in the base.
		"JAVA_OPTS=-Xmx128m -XX:TieredStopAtLevel=1 -XX:-UsePerfData -Duser.home=" + base,
	}
	if os.Geteuid() == 0 {
		cred := nobody(t)
		err := filepath.Walk(base, func(p string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, int(cred.Uid), int(cred.Gid))
		})
		if err != nil {
			t.Fatal(err)
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	startCmd(t, port, cmd, tomcatStartLimit)
	return "http://127.0.0.1:" + port
}

// nobody is the credential of the user nobody, for a server that should
// not run as root.
func nobody(t *testing.T) *syscall.Credential {
	t.Helper()
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Fatalf("running as root, and no user nobody to run Tomcat as: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

// fetch GETs base+path with c, sending path exactly as written, following
// no redirect, and returns the status and body.
func fetch(t *testing.T, c *http.Client, base, path string, h2 bool) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := req.URL.RequestURI(); got != path {
		t.Fatalf("the client would send %q, not %q", got, path)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if h2 && resp.ProtoMajor != 2 {
		t.Fatalf("GET %s: %s; want HTTP/2", path, resp.Proto)
	}
	return resp.StatusCode, string(body)
}

// spelling is a path that a servlet container reads as a protected page.
type spelling struct {
	path   string
	status int // the proxy's answer to a client the protected route refuses
}

// variants are the percent-encoded forms of s.path: dots encoded, the
// protected name's first letter encoded, and ';' encoded (%3B is data,
// not a parameter, to Tomcat too: a name it has no page for, 404).
func (s spelling) variants() []spelling {
	out := []spelling{s,
		{strings.ReplaceAll(s.path, ".", "%2e"), s.status},
		{strings.ReplaceAll(s.path, ".", "%2E"), s.status},
		{strings.NewReplacer("/admin", "/%61dmin", "/private", "/%70rivate").Replace(s.path), s.status},
	}
	if strings.Contains(s.path, ";") {
		out = append(out, spelling{strings.ReplaceAll(s.path, ";", "%3B"), 404}, spelling{strings.ReplaceAll(s.path, ";", "%3b"), 404})
	}
	return out
}

// TestProxyPathParametersTomcat (issue 29, point 1): behind `minica proxy`,
// a Tomcat webapp whose /admin route lets only the client "admin" in and
// whose /private route refuses everyone never serves those pages to
// another client, whatever the spelling of the path: a path parameter on a
// dot or empty segment (which Tomcat strips before resolving the dots),
// on /admin itself, percent-encoded, over HTTP/1.1 and HTTP/2. The same
// spellings sent to Tomcat directly do reach the pages.
func TestProxyPathParametersTomcat(t *testing.T) {
	p := newPKI(t)
	admin := issueClient(t, p.dir, "admin", "admin@example.com")
	tomcat := startTomcat(t)

	var spellings []spelling
	for _, s := range []spelling{
		{"/x/..;/admin/secret.txt", 400},
		{"/x/..;/admin/", 400},
		{"/.;/admin/secret.txt", 400},
		{"/;/admin/secret.txt", 400},
		{"/x/..;jsessionid=1/admin/secret.txt", 400},
		{"/x/..;/admin/y/..;", 400},
		{"/x/..;/private/secret.txt", 400},
		{"/;/private/", 400},
		{"/x/.;/../private/secret.txt", 400},
		{"/admin;x/secret.txt", 403},
		{"/admin;jsessionid=1/", 403},
		{"/private;x/secret.txt", 403},
		{"/ADMIN/secret.txt", 404},
	} {
		spellings = append(spellings, s.variants()...)
	}

	// Tomcat itself serves the protected pages for these spellings: the
	// proxy is what stands between them and a client.
	direct := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, path := range []string{"/admin/secret.txt", "/x/..;/admin/secret.txt", "/x/%2e%2e;/admin/secret.txt", "/.;/admin/secret.txt",
		"/;/admin/secret.txt", "/x/..;jsessionid=1/admin/secret.txt", "/admin;x/secret.txt", "/x/..;/private/secret.txt"} {
		if status, body := fetch(t, direct, tomcat, path, false); status != 200 || !strings.Contains(body, adminPage) && !strings.Contains(body, privatePage) {
			t.Fatalf("Tomcat directly: GET %s = %d %.60q; want a protected page (else this test proves nothing)", path, status, body)
		}
	}

	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.json")
	writeFile(t, policy, strings.ReplaceAll(`{"routes": [
  {"name": "admin", "host": "*", "path": "/admin", "upstream": "TOMCAT", "allow": {"cn": ["admin"]}},
  {"name": "private", "host": "*", "path": "/private", "refuse": true},
  {"name": "x", "host": "*", "path": "/x", "upstream": "TOMCAT", "allow": {"any": true}},
  {"name": "broad", "host": "*", "upstream": "TOMCAT", "allow": {"any": true}}
]}`, "TOMCAT", tomcat))
	port := freePort(t)
	proxy := start(t, port, minicaBin, "--dir", p.dir, "proxy", "--listen", "127.0.0.1:"+port, "--policy", policy,
		"--server-cert", "web", "--ca", filepath.Join(p.dir, "ca.crt"))
	front := "https://127.0.0.1:" + port
	roots := x509.NewCertPool()
	caPEM, err := os.ReadFile(p.caFile)
	if err != nil || !roots.AppendCertsFromPEM(caPEM) {
		t.Fatalf("reading %s: %v", p.caFile, err)
	}
	clientOf := func(c client, h2 bool) *http.Client {
		cert, err := tls.LoadX509KeyPair(c.cert, c.key)
		if err != nil {
			t.Fatal(err)
		}
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}}, ForceAttemptHTTP2: h2}
		if !h2 {
			tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
		}
		t.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: tr, Timeout: 10 * time.Second, CheckRedirect: direct.CheckRedirect}
	}

	for _, h2 := range []bool{false, true} {
		t.Run(map[bool]string{false: "http1", true: "http2"}[h2], func(t *testing.T) {
			alice, adm := clientOf(p.alice, h2), clientOf(admin, h2)
			// The routes work: admin reaches /admin (its parameter
			// forwarded, Tomcat reading the bare segment), alice /x and
			// not /admin.
			for _, tt := range []struct {
				c      *http.Client
				path   string
				status int
				want   string
			}{
				{adm, "/admin/secret.txt", 200, adminPage},
				{adm, "/admin;jsessionid=1/secret.txt", 200, adminPage},
				{alice, "/x/", 200, xPage},
				{alice, "/", 200, rootPage},
				{alice, "/admin/secret.txt", 403, ""},
				{alice, "/private/secret.txt", 403, ""},
			} {
				if status, body := fetch(t, tt.c, front, tt.path, h2); status != tt.status || !strings.Contains(body, tt.want) {
					t.Errorf("GET %s = %d %.60q; want %d %q", tt.path, status, body, tt.status, tt.want)
				}
			}
			for _, s := range spellings {
				status, body := fetch(t, alice, front, s.path, h2)
				if strings.Contains(body, adminPage) || strings.Contains(body, privatePage) {
					t.Errorf("alice got a protected page with GET %s: %d %.60q", s.path, status, body)
					continue
				}
				if status != s.status {
					t.Errorf("GET %s = %d %.60q; want %d", s.path, status, body, s.status)
				}
			}
		})
	}
	if t.Failed() {
		t.Logf("proxy log:\n%s", proxy.output())
	}
}

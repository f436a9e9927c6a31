package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// mustRunIn is runIn that fails the test on a non-zero status.
func mustRunIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	code, out := runIn(dir, args...)
	if code != 0 {
		t.Fatalf("minica %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

// wantOutput checks that out holds every one of parts.
func wantOutput(t *testing.T, args []string, out string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(out, p) {
			t.Errorf("minica %s:\n%s\nwant it to contain %q", strings.Join(args, " "), out, p)
		}
	}
}

// A password file whose password does not open a .p12 (or an encrypted
// key) is named, with the bundle, instead of being told to pass the
// --password-file it was given (issue 31, point 2).
func TestMistakeP12WrongPasswordFile(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	dir := filepath.Join(work, "ca")
	pw := writeFile(t, work, "pw.txt", "right horse battery\n")
	wrong := writeFile(t, work, "wrong.txt", "wrong horse battery\n")
	p12 := filepath.Join(work, "bob.p12")
	enc := filepath.Join(work, "bob.enc")
	mustRunIn(t, dir, "init", "--cn", "Root", "--no-password")
	mustRunIn(t, dir, "issue", "client", "bob", "--key-out", filepath.Join(work, "bob.key"))
	mustRunIn(t, dir, "export", "p12", "bob", "--password-file", pw, "--out", p12)
	mustRunIn(t, dir, "convert", filepath.Join(work, "bob.key"), "--encrypt", "--new-password-file", pw, "--out", enc)
	for _, tt := range []struct {
		args []string
		what string // the file the password does not open
		flag string
	}{
		{[]string{"convert", p12, "--password-file", wrong, "--out", filepath.Join(work, "bob.pem")}, p12, "--password-file"},
		{[]string{"inspect", p12, "--password-file", wrong}, p12, "--password-file"},
		{[]string{"convert", enc, "--decrypt", "--password-file", wrong, "--out", filepath.Join(work, "plain.key")}, enc, "--password-file"},
		{[]string{"export", "p12", "bob", "--key", enc, "--key-password-file", wrong, "--password-file", pw, "--out", filepath.Join(work, "again.p12")}, enc, "--key-password-file"},
	} {
		code, out := runIn(dir, tt.args...)
		if code != 1 {
			t.Errorf("minica %s: exit %d; want 1\n%s", strings.Join(tt.args, " "), code, out)
		}
		wantOutput(t, tt.args, out,
			`minica: error: the password in "`+wrong+`" (`+tt.flag+`) does not open `+tt.what+"\n",
			`minica: hint: "`+wrong+`" must hold the password of `+tt.what+", alone on its line")
		if strings.Contains(out, "pass --") {
			t.Errorf("minica %s: tells to pass a flag that was given:\n%s", strings.Join(tt.args, " "), out)
		}
	}
}

// newIntermediateDir makes a root and an intermediate signed by it, both
// without a password, and returns the intermediate's directory: serve
// issues an OCSP responder certificate there (a root signs its answers
// with its own key).
func newIntermediateDir(t *testing.T, work string) string {
	t.Helper()
	root, inter := filepath.Join(work, "root"), filepath.Join(work, "int")
	csr, cert, crl := filepath.Join(work, "int.csr"), filepath.Join(work, "int.crt"), filepath.Join(work, "root.crl")
	mustRunIn(t, root, "init", "--root", "--cn", "Root", "--no-password")
	mustRunIn(t, inter, "init", "--intermediate", "--cn", "Issuing", "--no-password", "--csr-out", csr)
	mustRunIn(t, root, "sign-intermediate", csr, "--out", cert)
	mustRunIn(t, root, "crl", "--out", crl)
	mustRunIn(t, inter, "init", "--intermediate", "--import", cert, "--root-crl", crl)
	return inter
}

// A port already taken stops every listening command with a hint that
// names the address and the command's own flag, and serve binds all its
// listeners before it issues anything: the CA is left as it was (issue 31,
// point 2).
func TestMistakePortInUse(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	dir := newIntermediateDir(t, work)
	mustRunIn(t, dir, "issue", "server", "app", "--dns", "localhost")
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	for _, tt := range []struct {
		args []string
		flag string
	}{
		{[]string{"serve", "--listen", addr}, "--listen"},
		{[]string{"serve", "--listen", "127.0.0.1:0", "--metrics-listen", addr}, "--metrics-listen"},
		{[]string{"serve", "--listen", "127.0.0.1:0", "--listen-ocsp", addr}, "--listen-ocsp"},
		{[]string{"serve", "--listen", "127.0.0.1:0", "--listen-tls", addr, "--server-cert", "app"}, "--listen-tls"},
		{[]string{"proxy", "--upstream", "http://127.0.0.1:1", "--server-cert", "app", "--listen", addr}, "--listen"},
		{[]string{"proxy", "--upstream", "http://127.0.0.1:1", "--server-cert", "app", "--listen", "127.0.0.1:0", "--metrics", addr}, "--metrics"},
		{[]string{"echo", "--listen", addr}, "--listen"},
	} {
		before := dirHash(t, dir)
		code, out := runIn(dir, tt.args...)
		if code != 1 {
			t.Errorf("minica %s: exit %d; want 1\n%s", strings.Join(tt.args, " "), code, out)
		}
		wantOutput(t, tt.args, out, `minica: error: listening `, addr,
			"minica: hint: another process listens on "+addr+": stop it, or choose another port with "+tt.flag+"\n")
		if dirHash(t, dir) != before {
			t.Errorf("minica %s changed the CA directory", strings.Join(tt.args, " "))
		}
	}
}

// runInFor is runIn that stops a command still running after d (a proxy
// or a server that started when it should not have).
func runInFor(d time.Duration, dir string, args ...string) (int, string) {
	e := newEnv()
	var out syncBuffer
	e.stdin, e.stdout, e.stderr = strings.NewReader(""), &out, &out
	e.terminal = func() bool { return false }
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return runInTest(ctx, append([]string{"minica", "--dir", dir}, args...), e), out.String()
}

// A replica whose --crl URL serves the CRL of another CA is told that the
// URL or --ca is wrong, naming both CAs, not to publish a CRL; so is crl
// fetch (issue 31, point 2).
func TestMistakeCRLOfAnotherCA(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	dir, other := filepath.Join(work, "ca"), filepath.Join(work, "other")
	mustRunIn(t, dir, "init", "--cn", "Root", "--no-password")
	mustRunIn(t, dir, "issue", "server", "app", "--dns", "localhost")
	mustRunIn(t, other, "init", "--cn", "Other", "--no-password")
	srv := httptest.NewServer(serveBytes(readFile(t, filepath.Join(other, "crl.der"))))
	defer srv.Close()
	url := srv.URL + "/crl.der"
	for _, tt := range []struct {
		args []string
		hint string
	}{
		{[]string{"proxy", "--upstream", "http://127.0.0.1:1", "--server-cert", "app", "--listen", "127.0.0.1:0", "--crl", url},
			`minica: hint: the CRL at ` + url + ` is signed by "CN=Other", not by this CA ("CN=Root"): check --crl URL or --ca` + "\n"},
		{[]string{"crl", "fetch", url, "--out", filepath.Join(work, "crl.der"), "--ca", filepath.Join(dir, "ca.crt")},
			`minica: hint: the CRL at ` + url + ` is signed by "CN=Other", not by the CA of --ca ("CN=Root"): check the URL or --ca` + "\n"},
	} {
		code, out := runInFor(time.Minute, dir, tt.args...)
		if code != 1 {
			t.Errorf("minica %s: exit %d; want 1\n%s", strings.Join(tt.args, " "), code, out)
		}
		wantOutput(t, tt.args, out, tt.hint)
		if strings.Contains(out, "minica crl'") {
			t.Errorf("minica %s: tells to publish a CRL:\n%s", strings.Join(tt.args, " "), out)
		}
	}
}

// runInAt is runIn with the clock at now.
func runInAt(now time.Time, dir string, args ...string) (int, string) {
	e := newEnv()
	var out bytes.Buffer
	e.stdin, e.stdout, e.stderr = strings.NewReader(""), &out, &out
	e.terminal = func() bool { return false }
	e.now = func() time.Time { return now }
	return runInTest(context.Background(), append([]string{"minica", "--dir", dir}, args...), e), out.String()
}

// An expired CRL, in verify and crl status, says when it expired and how
// to get a fresh one: minica crl, or serve, which keeps it fresh (issue
// 31, point 2). A verify --at past a CRL still current now gets no advice.
func TestMistakeExpiredCRL(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "ca")
	mustRunIn(t, dir, "init", "--cn", "Root", "--no-password")
	mustRunIn(t, dir, "issue", "client", "alice")
	_, status := runIn(dir, "crl", "status", "--json")
	var st struct {
		NextUpdate time.Time `json:"next_update"`
	}
	if err := json.Unmarshal([]byte(status), &st); err != nil {
		t.Fatalf("crl status --json: %v\n%s", err, status)
	}
	later := st.NextUpdate.Add(time.Hour)
	advice := "minica: hint: the CRL expired at " + st.NextUpdate.UTC().Format(time.RFC3339) +
		": publish a fresh one with 'minica crl', or run 'minica serve', which re-signs it before it lapses\n"
	for _, tt := range []struct {
		args []string
		code int
	}{
		{[]string{"verify", "alice"}, 1},
		{[]string{"crl", "status"}, crlExpired},
		{[]string{"crl", "status", "--json"}, crlExpired},
	} {
		code, out := runInAt(later, dir, tt.args...)
		if code != tt.code {
			t.Errorf("minica %s: exit %d; want %d\n%s", strings.Join(tt.args, " "), code, tt.code, out)
		}
		wantOutput(t, tt.args, out, advice)
	}
	// crl fetch refuses the expired CRL a URL serves, and says where a
	// fresh one comes from.
	srv := httptest.NewServer(serveBytes(readFile(t, filepath.Join(dir, "crl.der"))))
	defer srv.Close()
	fetch := []string{"crl", "fetch", srv.URL + "/crl.der", "--out", filepath.Join(t.TempDir(), "crl.der"), "--ca", filepath.Join(dir, "ca.crt")}
	code, out := runInAt(later, dir, fetch...)
	if code != 1 {
		t.Errorf("minica %s: exit %d; want 1\n%s", strings.Join(fetch, " "), code, out)
	}
	wantOutput(t, fetch, out, "minica: hint: the CRL at "+srv.URL+"/crl.der expired at "+st.NextUpdate.UTC().Format(time.RFC3339)+
		": on the CA host, publish a fresh one with 'minica crl', or run 'minica serve' there, which re-signs it before it lapses\n")
	at := []string{"verify", "alice", "--at", later.Format(time.RFC3339)}
	if code, out := runIn(dir, at...); code != 1 || strings.Contains(out, "hint") {
		t.Errorf("minica %s: exit %d; want 1 and no hint\n%s", strings.Join(at, " "), code, out)
	}
}

// The proxy logs what to do with a CRL past its nextUpdate (the proxy
// package logs Config.CRLExpiredHint): on this host with the CA
// directory's CRL, on the CA host for a --crl URL or file.
func TestMistakeExpiredCRLProxyHint(t *testing.T) {
	for _, tt := range []struct {
		crls []string
		want string
	}{
		{nil, "publish a fresh one with 'minica crl', or run 'minica serve', which re-signs it before it lapses"},
		{[]string{"http://pki.example.com/crl.der"}, "on the CA host, publish a fresh one with 'minica crl', or run 'minica serve' there, which re-signs it before it lapses"},
		{[]string{"/etc/minica/crl.der"}, "on the CA host, publish a fresh one with 'minica crl', or run 'minica serve' there"},
	} {
		if got := proxyCRLExpiredHint(tt.crls); !strings.HasPrefix(got, tt.want) {
			t.Errorf("proxyCRLExpiredHint(%q) = %q; want %q", tt.crls, got, tt.want)
		}
	}
}

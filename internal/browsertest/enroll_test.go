//go:build interop

package browsertest

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"minica/formats"
)

// process is a long-running minica command (serve, echo) of the test.
type process struct {
	cmd *exec.Cmd
	log *lockedBuffer
}

// startMinica runs minica with args and waits (bounded) until its log
// matches ready; it returns the process and the match. The process gets
// SIGTERM when the test ends.
func (m *minica) startMinica(t *testing.T, ready *regexp.Regexp, args ...string) (*process, []string) {
	t.Helper()
	p := &process{log: &lockedBuffer{}}
	p.cmd = exec.Command(m.bin, args...)
	p.cmd.Env = append(os.Environ(), "MINICA_DIR="+m.dir)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting minica %s: %v", args[0], err)
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- p.cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-done
			t.Errorf("minica %s did not stop within 10s of SIGTERM", args[0])
		}
	})
	var match []string
	err := waitFor(15*time.Second, func() error {
		if match = ready.FindStringSubmatch(p.log.String()); match == nil {
			return errors.New("no start-up line")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("minica %s did not start within 15s; log:\n%s", args[0], p.log)
	}
	return p, match
}

// browserSession is a headless Chromium driven through the DevTools
// protocol, with a fresh profile and the NSS database of home.
type browserSession struct {
	ctx       context.Context
	downloads string
}

func newBrowser(t *testing.T, home string) *browserSession {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath("chromium"),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Env("HOME=" + home),
		chromedp.WindowSize(820, 1100),
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.Headless, chromedp.NoSandbox,
	}
	for _, f := range chromiumFlags {
		opts = append(opts, chromedp.Flag(strings.TrimPrefix(f, "--"), true))
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	b := &browserSession{ctx: ctx, downloads: t.TempDir()}
	// The first Run starts the browser: no timeout on it (see chromedp.Run).
	if err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
			Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: b.downloads,
		})
		return err
	})); err != nil {
		t.Fatalf("starting headless Chromium: %v", err)
	}
	return b
}

// do runs steps within a minute.
func (b *browserSession) do(t *testing.T, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// text returns the text of the page's body.
func (b *browserSession) text(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
	if err != nil {
		t.Fatalf("reading the page: %v", err)
	}
	return s
}

// shotWidth is the width of every page screenshot: the window's.
const shotWidth = 820

// shot saves a PNG of the whole page as dir/name.png, after checking that
// it is one, as wide as the window and at least a screen high; and a copy,
// recompressed, in $MINICA_ENROLL_DOCS when it is set (docs/enrollment/
// holds them). Only the DOM text is compared with what the page should
// say, so the test does not depend on fonts.
func (b *browserSession) shot(t *testing.T, dir, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	data, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("screenshot %s is not a PNG: %v", name, err)
	}
	if sz := img.Bounds().Size(); sz.X != shotWidth || sz.Y < 400 {
		t.Errorf("screenshot %s is %dx%d; want %d wide and at least 400 high", name, sz.X, sz.Y, shotWidth)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if docs := os.Getenv("MINICA_ENROLL_DOCS"); docs != "" {
		if err := os.WriteFile(filepath.Join(docs, name+".png"), smallPNG(t, img), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("screenshot: %s", filepath.Join(dir, name+".png"))
}

// smallPNG encodes img for the docs with a palette of its 256 most common
// colours: a page's flat colours stay exact, only a few shades of its
// anti-aliased text move to a neighbour, and the file is a third of the
// size.
func smallPNG(t *testing.T, img image.Image) []byte {
	t.Helper()
	b := img.Bounds()
	count := map[color.RGBA]int{}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			count[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)]++
		}
	}
	colors := slices.SortedFunc(maps.Keys(count), func(a, b color.RGBA) int { return count[b] - count[a] })
	pal := make(color.Palette, 0, 256)
	for _, c := range colors[:min(len(colors), 256)] {
		pal = append(pal, c)
	}
	small := image.NewPaletted(b, pal)
	draw.Src.Draw(small, b, img, b.Min)
	var out bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&out, small); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// pageSays checks that the text of the page, spaces folded, holds each of
// want.
func (b *browserSession) pageSays(t *testing.T, state string, want ...string) {
	t.Helper()
	text := strings.Join(strings.Fields(b.text(t)), " ")
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("the %s page lacks %q:\n%s", state, w, text)
		}
	}
}

// download waits (bounded) for the file name to finish downloading and
// returns its content.
func (b *browserSession) download(t *testing.T, name string) []byte {
	t.Helper()
	path := filepath.Join(b.downloads, name)
	var data []byte
	err := waitFor(30*time.Second, func() error {
		var err error
		if data, err = os.ReadFile(path); err != nil || len(data) == 0 {
			entries, _ := os.ReadDir(b.downloads)
			return fmt.Errorf("no %s in the downloads yet (%d entries)", name, len(entries))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestChromiumEnrollment follows an enrollment link as a person would, in
// headless Chromium: the page, a chosen password, Download, the page that
// says the file is ready and what comes next, the .p12 it saves; each
// state's text is checked and its screenshot taken; the
// .p12 goes into a fresh NSS database, and the same browser kind logs in
// through minica proxy to minica echo, which shows the CN. The link, opened
// again, says it was used. A second link shows the generated-password page.
func TestChromiumEnrollment(t *testing.T) {
	requireTools(t)
	shots := artifactDir(t)
	work := t.TempDir()
	m := buildMinica(t)
	caCN := m.initCA(t, work, "minica enrollment test CA")
	m.run(t, work, "issue", "server", "localhost", "--dns", "localhost", "--ip", "127.0.0.1")
	caCert := filepath.Join(m.dir, "ca.crt")

	_, match := m.startMinica(t, regexp.MustCompile(`minica serve: listening on https://127\.0\.0\.1:(\d+)`),
		"serve", "--listen", "", "--listen-tls", "127.0.0.1:0", "--server-cert", "localhost", "--enroll")
	base := "https://127.0.0.1:" + match[1]
	var link struct{ URL string }
	if err := json.Unmarshal([]byte(m.run(t, work, "enroll", "alice", "--email", "alice@example.com", "--base-url", base, "--json")), &link); err != nil {
		t.Fatal(err)
	}

	// The browser trusts the CA (for serve's HTTPS) and has no client key.
	trusting := newTrustingHome(t, caCert)
	b := newBrowser(t, trusting)
	const password = "alice's long bundle password"
	b.do(t, "opening the link", chromedp.Navigate(link.URL), chromedp.WaitVisible(chromedp.ID("download")))
	b.pageSays(t, "enrollment", "alice", "alice@example.com", caCN, "Installing on Linux",
		"valid for 1 year from the download", "Certificate file (.p12) for current systems",
		"pk12util -i ~/Downloads/alice.p12 -d sql:$HOME/.pki/nssdb")
	b.do(t, "typing the password",
		chromedp.SendKeys(chromedp.ID("password"), password),
		chromedp.SendKeys(chromedp.ID("password2"), password))
	b.shot(t, shots, "enroll-form")

	// Download: the page says the file was made, how to open it here and
	// what the password is for, and saves the file.
	b.do(t, "downloading", chromedp.Click(chromedp.ID("download")), chromedp.WaitVisible(chromedp.ID("save")))
	b.pageSays(t, "after Download", "Your certificate is ready", "alice.p12", "Save alice.p12",
		"Installing on Linux", "pk12util -i ~/Downloads/alice.p12 -d sql:$HOME/.pki/nssdb",
		"not a password to sign in", "no page shows it again", "cannot be downloaded again")
	b.shot(t, shots, "enroll-ready")
	b.do(t, "saving the file", chromedp.Click(chromedp.ID("save")))
	p12 := b.download(t, "alice.p12")
	key, leaf, _, err := formats.DecodeP12(p12, password)
	if err != nil || leaf.Subject.CommonName != "alice" {
		t.Fatalf("the downloaded .p12 does not open with the chosen password: %v", err)
	}

	// The same link again: used, when and from where.
	b.do(t, "opening the link again", chromedp.Navigate(link.URL), chromedp.WaitVisible(chromedp.ID("message")))
	b.pageSays(t, "used-link", "This link was already used", "127.0.0.1", "If that was not you")
	b.shot(t, shots, "enroll-used")
	b.do(t, "opening an unknown link", chromedp.Navigate(base+"/enroll/"+strings.Repeat("A", 43)), chromedp.WaitVisible(chromedp.ID("message")))
	b.shot(t, shots, "enroll-unknown")

	// A second link: the generated password is shown once.
	var bob struct{ URL string }
	if err := json.Unmarshal([]byte(m.run(t, work, "enroll", "bob", "--base-url", base, "--json")), &bob); err != nil {
		t.Fatal(err)
	}
	b.do(t, "generating a password", chromedp.Navigate(bob.URL), chromedp.WaitVisible(chromedp.ID("generate")),
		chromedp.Click(chromedp.ID("generate")), chromedp.WaitVisible(chromedp.ID("generated")))
	if !regexp.MustCompile(`[2-9A-HJ-NP-Za-km-z]{24}`).MatchString(b.text(t)) {
		t.Errorf("the generated-password page shows no password:\n%s", b.text(t))
	}
	b.shot(t, shots, "enroll-generated")

	// Log in with the downloaded certificate, from a fresh NSS database.
	pwFile := filepath.Join(work, "alice.pw")
	p12File := filepath.Join(work, "alice.p12")
	if err := os.WriteFile(pwFile, []byte(password), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p12File, p12, 0o600); err != nil {
		t.Fatal(err)
	}
	home := newNSSHome(t, caCert, p12File, pwFile, "alice")
	id := issued{Cert: filepath.Join(work, "alice.crt"), Key: filepath.Join(work, "alice.key")}
	keyPEM, err := formats.MarshalPrivateKeyPEM(key, nil)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(id.Key, keyPEM, 0o600)
	os.WriteFile(id.Cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf.Raw}), 0o644)
	_, echo := m.startMinica(t, regexp.MustCompile(`minica echo: listening on (http://127\.0\.0\.1:\d+)`), "echo", "--listen", "127.0.0.1:0")
	px := m.startProxy(t, "localhost", echo[1], id)
	origin := fmt.Sprintf("https://127.0.0.1:%d", px.port)
	installPolicy(t, origin, caCN)
	dom := dumpDOM(t, home, origin+"/")
	if !regexp.MustCompile(`(?i)x-ssl-client-cn: alice\b`).MatchString(dom) {
		t.Errorf("the page behind the proxy does not show CN alice:\n%s", dom)
	}
	screenshot(t, home, origin+"/", shots, "enroll-logged-in")
	if docs := os.Getenv("MINICA_ENROLL_DOCS"); docs != "" {
		data, err := os.ReadFile(filepath.Join(shots, "enroll-logged-in.png"))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(docs, "enroll-logged-in.png"), smallPNG(t, img), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// newTrustingHome returns a home directory whose NSS database trusts caCert
// for TLS servers and holds no key.
func newTrustingHome(t *testing.T, caCert string) string {
	t.Helper()
	home := t.TempDir()
	db := filepath.Join(home, ".pki", "nssdb")
	if err := os.MkdirAll(db, 0o700); err != nil {
		t.Fatal(err)
	}
	run(t, nil, "certutil", "-N", "-d", "sql:"+db, "--empty-password")
	run(t, nil, "certutil", "-A", "-d", "sql:"+db, "-n", "minica test CA", "-t", "C,,", "-i", caCert)
	return home
}

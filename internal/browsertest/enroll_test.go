//go:build interop

package browsertest

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestChromiumEnrollment follows an enrollment link as a person would, in
// headless Chromium: the page, a chosen password, Download, the page that
// says the file is ready and what comes next, the .p12 it saves; each
// state's text is checked and its screenshot taken; the
// .p12 goes into a fresh NSS database, and the same browser kind logs in
// through minica proxy to minica echo, which shows the CN. The link, opened
// again, says it was used. A second link shows the generated-password page.
func TestChromiumEnrollment(t *testing.T) {
	bed := newBed(t, "minica enrollment test CA")
	m, work, shots, caCN, caCert := bed.m, bed.work, bed.shots, bed.caCN, bed.caCert

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
	b.docs = os.Getenv("MINICA_ENROLL_DOCS")
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
	alice := saveBundle(t, work, "alice", b.download(t, "alice.p12"), password)
	if cn := alice.leaf.Subject.CommonName; cn != "alice" {
		t.Errorf("the downloaded certificate's CN is %q; want alice", cn)
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
	home := newNSSHome(t, caCert, alice.p12, alice.pwFile, "alice")
	_, origin := m.startEchoProxy(t, alice.id)
	installPolicy(t, caCN, origin)
	dom := dumpDOM(t, home, origin+"/")
	if !regexp.MustCompile(`(?i)x-ssl-client-cn: alice\b`).MatchString(dom) {
		t.Errorf("the page behind the proxy does not show CN alice:\n%s", dom)
	}
	toDocs(t, b.docs, "enroll-logged-in", screenshot(t, home, origin+"/", shots, "enroll-logged-in"))
}

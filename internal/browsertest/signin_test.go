//go:build interop

package browsertest

import (
	"context"
	"minica/internal/testport"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"minica/ca"
	"minica/internal/testidp"
)

// The people of the provider in TestChromiumSignIn: alice, whose email the
// provider vouches for, and mallory, whose email it does not.
var (
	signinAlice   = testidp.User{Username: "alice", Password: "alice's provider password", Email: "alice@example.com", EmailVerified: true, Name: "Alice Liddell"}
	signinMallory = testidp.User{Username: "mallory", Password: "mallory's provider password", Email: "mallory@example.com", EmailVerified: false, Name: "Mallory Mint"}
)

// signinContact is serve's --oidc-contact, shown on a refusal.
const signinContact = "the IT desk, it@example.com"

// TestChromiumSignIn proves sign-in (issue 33) with a real OpenID provider
// and a real browser: headless Chromium opens serve's start page, signs in
// through the provider's own login form (the provider on localhost, serve on
// 127.0.0.1: two sites, as in production, so that a SameSite=Strict cookie
// would fail here), names a device on My certificates, picks a password on
// the enrollment page and downloads the .p12. The .p12 opens with that
// password and says who signed in; imported into a fresh NSS database, it
// lets the browser through minica proxy to minica echo. Back on My
// certificates the device is listed as valid and revoked as lost; the proxy
// then shows the refusal page, whose link leads back to the start page. A
// person whose email the provider does not vouch for is refused with a
// page that says why. Each state's text is checked and its screenshot
// taken; with $MINICA_SIGNIN_DOCS set the screenshots are written there
// (docs/sign-in/ holds them).
func TestChromiumSignIn(t *testing.T) {
	bed := newBed(t, "minica sign-in test CA")
	m, work, shots, caCN, caCert := bed.m, bed.work, bed.shots, bed.caCN, bed.caCert
	srv := m.startSigninServe(t, work, signinAlice, signinMallory)
	docs := os.Getenv("MINICA_SIGNIN_DOCS")

	// The person's browser trusts the CA (for serve's HTTPS) and holds no
	// client key yet.
	b := newBrowser(t, newTrustingHome(t, caCert))
	b.docs = docs
	b.do(t, "opening the start page", chromedp.Navigate(srv.base+"/"), chromedp.WaitVisible(chromedp.ID("signin")))
	b.pageSays(t, "start", "Get your certificate", "Sign in with your company account to get a certificate for each of your devices",
		"Sign in with your company account")
	if b.present(t, "devices-link") {
		t.Errorf("the start page offers My certificates before anyone signed in")
	}
	b.shot(t, shots, "signin-start")

	b.do(t, "following Sign in", chromedp.Click(chromedp.ID("signin")), chromedp.WaitVisible(chromedp.ID("username")))
	if loc := b.location(t); !strings.HasPrefix(loc, srv.idp.Issuer()+"/") {
		t.Errorf("Sign in led to %s; want the provider at %s", loc, srv.idp.Issuer())
	}
	b.pageSays(t, "provider's login", "Sign in", "Username", "Password")
	b.fillLogin(t, signinAlice)
	b.shot(t, shots, "signin-provider")
	// My certificates (#add), or sign-in's page that says what went wrong.
	b.do(t, "signing in at the provider", chromedp.Click(chromedp.ID("submit")), chromedp.WaitVisible(chromedp.CSS("#add, #message")))
	if loc := b.location(t); loc != srv.base+"/signin/devices" {
		t.Fatalf("after the provider the browser is not on My certificates, %s/signin/devices: %s", srv.base, b.where())
	}
	// The binding cookie came back from the other site (SameSite=Lax) and
	// is spent; the session cookie is what the docs promise.
	cookies := b.cookies(t, srv.base+"/")
	if c := cookies["__Host-minica-session"]; c == nil || !c.Secure || !c.HTTPOnly || c.SameSite != network.CookieSameSiteLax || c.Path != "/" {
		t.Errorf("the session cookie is %+v; want __Host-minica-session, Secure, HttpOnly, SameSite=Lax, path /", c)
	}
	if c := cookies["__Host-minica-signin"]; c != nil {
		t.Errorf("the sign-in's binding cookie outlived the callback: %+v", c)
	}
	b.pageSays(t, "My certificates (empty)", "My certificates", "Signed in as Alice Liddell (alice@example.com)",
		"You have no device certificates yet.", "You hold 0 valid device certificates, of at most 5.", "Get a certificate", "Sign out")
	b.shot(t, shots, "signin-devices-empty")

	// Name a device: the browser is sent to its enrollment page.
	const label, password = "alice's laptop", "alice's long bundle password"
	name := ca.DeviceName(signinAlice.Email, label)
	b.do(t, "naming a device", chromedp.SendKeys(chromedp.ID("device"), label), chromedp.Click(chromedp.ID("add")),
		chromedp.WaitVisible(chromedp.ID("download")))
	if loc := b.location(t); !strings.HasPrefix(loc, srv.base+"/enroll/") {
		t.Errorf("Get a certificate led to %s; want an enrollment link of %s", loc, srv.base)
	}
	b.pageSays(t, "enrollment", "Alice Liddell", "alice@example.com", caCN, "Installing on Linux",
		"valid for 90 days from the download", name+".p12")
	b.do(t, "typing the password",
		chromedp.SendKeys(chromedp.ID("password"), password),
		chromedp.SendKeys(chromedp.ID("password2"), password))
	b.shot(t, shots, "signin-enroll-form")
	b.do(t, "downloading", chromedp.Click(chromedp.ID("download")), chromedp.WaitVisible(chromedp.ID("save")))
	b.pageSays(t, "after Download", "Your certificate is ready", "Save "+name+".p12", "cannot be downloaded again")
	b.shot(t, shots, "signin-enroll-ready")
	b.do(t, "saving the file", chromedp.Click(chromedp.ID("save")))
	alice := saveBundle(t, work, "alice", b.download(t, name+".p12"), password)
	if cn, emails := alice.leaf.Subject.CommonName, alice.leaf.EmailAddresses; cn != signinAlice.Name || !slices.Equal(emails, []string{signinAlice.Email}) {
		t.Errorf("the certificate has CN %q and email SANs %q; want %q and [%q], the name and email the provider vouched for",
			cn, emails, signinAlice.Name, signinAlice.Email)
	}
	serial := ca.SerialHex(alice.leaf.SerialNumber)

	// The .p12 in a fresh NSS database lets Chromium through the proxy,
	// whose refusal pages link to serve's start page.
	px, origin := m.startEchoProxy(t, alice.id, "--refusal", "page", "--help-url", srv.base+"/")
	// serve asks for a client certificate too (for POST /renew): a
	// browser without a choice for it would wait at its picker.
	installPolicy(t, caCN, origin, srv.base)
	laptop := newBrowser(t, newNSSHome(t, caCert, alice.p12, alice.pwFile, signinAlice.Name))
	laptop.docs = docs
	laptop.do(t, "opening the app through the proxy", chromedp.Navigate(origin+"/"), chromedp.WaitReady(chromedp.CSS("body")))
	laptop.pageSays(t, "app behind the proxy", "X-Ssl-Client-Cn: Alice Liddell", "X-Ssl-Client-Email: alice@example.com")
	laptop.shot(t, shots, "signin-through-proxy")

	// Back on My certificates, from the start page: the device is valid.
	b.do(t, "opening the start page again", chromedp.Navigate(srv.base+"/"), chromedp.WaitVisible(chromedp.ID("devices-link")),
		chromedp.Click(chromedp.ID("devices-link")), chromedp.WaitVisible(chromedp.ID("device-"+serial)))
	row := b.textOf(t, "device-"+serial)
	for _, want := range []string{label, "valid"} {
		if !strings.Contains(row, want) {
			t.Errorf("the device's row on My certificates lacks %q: %q", want, row)
		}
	}
	b.pageSays(t, "My certificates (a device)", "You hold 1 valid device certificate, of at most 5.")
	b.shot(t, shots, "signin-devices")

	// Revoke it as lost: the page says so, and the proxy refuses it.
	b.do(t, "revoking the device", chromedp.SetValue(chromedp.ID("reason-"+serial), "keyCompromise"),
		chromedp.Click(chromedp.ID("revoke-"+serial)), chromedp.WaitVisible(chromedp.ID("notice")))
	b.pageSays(t, "after revoking", "The certificate of “"+label+"” is revoked: it no longer opens anything.",
		"You hold 0 valid device certificates, of at most 5.")
	if row := b.textOf(t, "device-"+serial); !strings.Contains(row, "revoked (lost or stolen)") {
		t.Errorf("the revoked device's row says %q; want revoked (lost or stolen)", row)
	}
	if b.present(t, "revoke-"+serial) {
		t.Errorf("My certificates still offers to revoke the revoked device")
	}
	b.shot(t, shots, "signin-revoked")
	px.reloadUntilRefused(t, m.dir, alice.id)

	laptop.do(t, "opening the app with the revoked certificate", chromedp.Navigate(origin+"/"), chromedp.WaitVisible(chromedp.ID("help")))
	laptop.pageSays(t, "refusal", "Your certificate has been revoked", "(reason: keyCompromise)", "Alice Liddell", "Get a new certificate")
	if href := laptop.attr(t, "help", "href"); href != srv.base+"/" {
		t.Errorf("the refusal page's link goes to %q; want serve's start page %s/", href, srv.base)
	}
	laptop.shot(t, shots, "signin-refusal")
	laptop.do(t, "following the refusal page's link", chromedp.Click(chromedp.ID("help")), chromedp.WaitVisible(chromedp.ID("signin")))
	if loc := laptop.location(t); loc != srv.base+"/" {
		t.Errorf("the refusal page's link led to %s; want %s/", loc, srv.base)
	}
	laptop.pageSays(t, "start (from the refusal page)", "Get your certificate", "Sign in with your company account")

	// Sign out, and sign in as someone whose email is not vouched for.
	b.do(t, "signing out", chromedp.Click(chromedp.ID("signout")), chromedp.WaitVisible(chromedp.ID("signin")))
	if b.present(t, "devices-link") {
		t.Errorf("the start page offers My certificates after signing out")
	}
	b.do(t, "following Sign in", chromedp.Click(chromedp.ID("signin")), chromedp.WaitVisible(chromedp.ID("username")))
	b.fillLogin(t, signinMallory)
	b.do(t, "signing in unverified", chromedp.Click(chromedp.ID("submit")), chromedp.WaitVisible(chromedp.CSS("#add, #message")))
	b.pageSays(t, "refused sign-in", "You cannot get a certificate here",
		"The identity provider does not vouch that your email address mallory@example.com is yours (it is not verified).",
		"Whom to ask: "+signinContact)
	b.shot(t, shots, "signin-refused-unverified")
	b.do(t, "opening My certificates unverified", chromedp.Navigate(srv.base+"/signin/devices"), chromedp.WaitVisible(chromedp.ID("signin")))
	b.pageSays(t, "My certificates (refused person)", "Sign in first")

	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`signin email=alice@example\.com subject=alice `),
		regexp.MustCompile(`signin-revoked email=alice@example\.com name=` + regexp.QuoteMeta(name) + ` serial=` + serial + ` reason=keyCompromise `),
		regexp.MustCompile(`signin-refused .*reason=email-unverified subject=mallory`),
	} {
		if !want.MatchString(srv.log.String()) {
			t.Errorf("serve's log has no line matching %q:\n%s", want, srv.log)
		}
	}
	if regexp.MustCompile(`signin email=mallory`).MatchString(srv.log.String()) {
		t.Errorf("serve let mallory, unverified, sign in:\n%s", srv.log)
	}
}

// signinServe is a running `minica serve --oidc-issuer` and its provider.
type signinServe struct {
	base string // https://127.0.0.1:PORT
	idp  *testidp.Provider
	log  *lockedBuffer
}

// serveTLSReady matches the start-up line of serve with --listen-tls.
var serveTLSReady = regexp.MustCompile(`minica serve: listening on https://127\.0\.0\.1:(\d+)`)

// startSigninServe runs a provider in the test that knows users and the
// client "minica", and `minica serve --enroll --oidc-issuer` on 127.0.0.1
// for the people of example.com. The provider must know serve's redirect
// URL, and so its port, before serve listens: a port free a moment ago is
// chosen, and another one (at most 3 tries) if it was taken meanwhile.
func (m *minica) startSigninServe(t *testing.T, work string, users ...testidp.User) *signinServe {
	t.Helper()
	secret := filepath.Join(work, "oidc.secret")
	if err := os.WriteFile(secret, []byte("the client secret of minica\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var err error
	for try := 0; try < 3; try++ {
		base := "https://127.0.0.1:" + strconv.Itoa(testport.Free(t))
		idp := testidp.Start(t, testidp.Config{
			Users:   users,
			Clients: []testidp.Client{{ID: "minica", Secret: "the client secret of minica", RedirectURIs: []string{base + "/signin/callback"}}},
		})
		var p *process
		p, _, err = m.tryStartMinica(t, serveTLSReady, "serve", "--listen", "", "--listen-tls", strings.TrimPrefix(base, "https://"),
			"--server-cert", "localhost", "--enroll",
			"--oidc-issuer", idp.Issuer(), "--oidc-client-id", "minica", "--oidc-client-secret-file", secret,
			"--oidc-redirect-url", base+"/signin/callback", "--oidc-allow-domain", "example.com", "--oidc-contact", signinContact)
		if err == nil {
			return &signinServe{base: base, idp: idp, log: p.log}
		}
		if !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	t.Fatal(err)
	return nil
}

// cookies returns the browser's cookies for url by name.
func (b *browserSession) cookies(t *testing.T, url string) map[string]*network.Cookie {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{url}})
	if err != nil {
		t.Fatalf("reading the cookies of %s: %v", url, err)
	}
	byName := map[string]*network.Cookie{}
	for _, c := range res.Cookies {
		byName[c.Name] = c
	}
	return byName
}

// fillLogin types u's username and password into the provider's login
// form.
func (b *browserSession) fillLogin(t *testing.T, u testidp.User) {
	t.Helper()
	b.do(t, "filling the provider's login form",
		chromedp.SendKeys(chromedp.ID("username"), u.Username),
		chromedp.SendKeys(chromedp.ID("password"), u.Password))
}

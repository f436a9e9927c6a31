package proxy

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"html/template"
	"io"
	"math/big"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"minica/identity"
	"minica/internal/pagesec"
	"minica/proxy/policy"
	"minica/revoke"
)

// The modes of Config.Refusal.
const (
	// RefusalAlert refuses a client certificate in the TLS handshake, with
	// the alert of its reason: what browsers show as
	// ERR_BAD_SSL_CLIENT_AUTH_CERT. The default.
	RefusalAlert = "alert"
	// RefusalPage lets every handshake through, with or without a client
	// certificate, and judges the certificate at the HTTP layer with the
	// same checks: a refused client gets a page (or text) that says why,
	// and none of its requests reaches the upstream.
	RefusalPage = "page"
)

// RefusalModes lists the modes of Config.Refusal, the default first.
var RefusalModes = []string{RefusalAlert, RefusalPage}

// RefusalHeader is the response header of a refusal page (RefusalPage)
// that names its reason, a Reason constant, as the access log and the
// refused-requests metric do.
const RefusalHeader = "X-Minica-Refusal"

// The status codes of refusal pages beside 403 (allowed nowhere here) and
// 503 (the proxy cannot check certificates): those nginx uses for the same
// refusals. A client that does not know them takes them for 400 (RFC 9110
// section 15).
const (
	StatusCertificateRequired = 496 // no client certificate
	StatusCertificateError    = 495 // a client certificate, refused
)

// checkRefusal checks and normalises the refusal mode and HelpURL.
func (c *Config) checkRefusal() error {
	mode, err := ParseRefusalMode(c.Refusal)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	c.Refusal = mode
	if err := CheckHelpURL(mode, c.HelpURL); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}

// ParseRefusalMode returns the mode of RefusalModes that s names, ignoring
// case; "" is RefusalAlert.
func ParseRefusalMode(s string) (string, error) {
	switch strings.ToLower(s) {
	case "", RefusalAlert:
		return RefusalAlert, nil
	case RefusalPage:
		return RefusalPage, nil
	}
	return "", fmt.Errorf("unknown refusal mode %q (known: %s)", s, strings.Join(RefusalModes, ", "))
}

// CheckHelpURL checks u, the help URL of refusal pages ("" for none), for
// the refusal mode: only RefusalPage shows it, and it must be an absolute
// http or https URL without user info.
func CheckHelpURL(mode, u string) error {
	if u == "" {
		return nil
	}
	if mode != RefusalPage {
		return fmt.Errorf("a help URL (%q) needs the refusal mode %q: alert refusals show no page", u, RefusalPage)
	}
	pu, err := url.Parse(u)
	if err != nil || pu.Scheme != "http" && pu.Scheme != "https" || pu.Host == "" || pu.User != nil {
		return fmt.Errorf("help URL %q: want an absolute http:// or https:// URL without user info", u)
	}
	return nil
}

// refusalTLS makes c, the configuration of the handshakes of one trust,
// ask for a client certificate without requiring one, in RefusalPage
// mode: its VerifyConnection still verifies a certificate presented, but
// refuses none. A verified chain is kept for connContext (and tells the
// listener the connection is a certificate holder's, see takeSlot); a
// refused certificate is verified again there, and every request of a
// refused client gets its page.
func (p *Proxy) refusalTLS(c *tls.Config) {
	if p.cfg.Refusal != RefusalPage {
		return
	}
	c.ClientAuth = tls.RequestClientCert
	verify := c.VerifyConnection
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) > 0 {
			verify(cs)
		}
		return nil
	}
}

// verifiedAtHandshake reports whether the client of tc, whose handshake
// succeeded, presented a certificate that verified: always in
// RefusalAlert mode, where the handshake refuses the others.
func (p *Proxy) verifiedAtHandshake(tc *tls.Conn) bool {
	if p.cfg.Refusal != RefusalPage {
		return true
	}
	certs := tc.ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return false
	}
	_, ok := p.verified.Load(certs[0])
	return ok
}

// refuse answers r, whose client (of ci) is refused for reason: in
// RefusalAlert mode with a short text, in RefusalPage mode with a refusal
// page. It returns the identity the access log names: id, or, for a
// client whose certificate never passed, one made of the certificate it
// presented (with Verify "FAILED:reason"), nil if none.
func (p *Proxy) refuse(w http.ResponseWriter, r *http.Request, ci *conn, id *identity.Identity, reason string) *identity.Identity {
	if p.cfg.Refusal != RefusalPage {
		refuseWithText(w, reason)
		return id
	}
	return p.refusePage(w, r, ci, id, reason, nil)
}

// refuseDecision answers r, whose verified client (of ci, as id) the
// policy refuses by d: in RefusalPage mode the refusals of a route's rule
// (not allowed, too few days left) get a refusal page, the others (no
// route, a misdirected request, a bad path) what refuseRoute answers.
func (p *Proxy) refuseDecision(w http.ResponseWriter, r *http.Request, ci *conn, id *identity.Identity, d policy.Decision) {
	if p.cfg.Refusal != RefusalPage || d.Reason != ReasonNotAllowed && d.Reason != ReasonDaysLeft {
		refuseRoute(w, d)
		return
	}
	p.refusePage(w, r, ci, id, d.Reason, &d)
}

// refusePage is refuse in RefusalPage mode, for a refusal of the policy's
// decision d when it is not nil.
func (p *Proxy) refusePage(w http.ResponseWriter, r *http.Request, ci *conn, id *identity.Identity, reason string, d *policy.Decision) *identity.Identity {
	now := p.cfg.Now()
	var cert *x509.Certificate
	if len(ci.certs) > 0 {
		cert = ci.certs[0]
	}
	ci.mu.Lock()
	why := ci.why
	ci.mu.Unlock()
	if why != nil && why.Reason != reason {
		why = nil // refused since for another reason (the CRL's)
	}
	pg := p.pageFor(reason, cert, why, now)
	if d != nil && p.cfg.PolicyFile != "" { // the one route of Upstream has no name to show
		pg.route(d, cert, now)
	}
	writeRefusal(w, r, pg)
	if id == nil && cert != nil {
		if seen, err := identity.New(cert, nil); err == nil {
			seen.Verify = "FAILED:" + reason
			seen.DaysLeft = identity.DaysLeft(seen.NotAfter, now)
			id = seen
		}
	}
	return id
}

// refusalStatus is the status code of a refusal page for reason.
func refusalStatus(reason string) int {
	switch reason {
	case ReasonNoCertificate:
		return StatusCertificateRequired
	case ReasonNotAllowed, ReasonDaysLeft:
		return http.StatusForbidden
	case ReasonCRLExpired, ReasonCRLNotYetValid, ReasonNoCRL, string(revoke.ReasonCRLMissing):
		return http.StatusServiceUnavailable
	}
	return StatusCertificateError
}

// refusalPage is what a refusal page says, as HTML or as text.
type refusalPage struct {
	Status           int
	Reason           string // a Reason constant
	Title            string
	Message          string // what happened
	Advice           string // what to do
	HelpURL          string // "" for none
	HelpText         string
	Cert             *seenCert // the certificate the client presented, nil if none
	Time             string
	Service          bool // the proxy's fault, not the client's
	CertificateTitle string
}

// seenCert is what a refusal page shows of the certificate presented.
type seenCert struct {
	CN, Serial, Issuer, NotBefore, NotAfter string
}

// restartAdvice ends the advice of a refusal that a new certificate, or
// another choice of one, puts right.
const restartAdvice = " Then quit the browser completely and open this page again: browsers remember the certificate they chose until they restart."

// pageTime is the form of every time on a refusal page.
func pageTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }

// displayText makes s, a name taken from a certificate, fit to show: no
// control or invisible formatting characters (such as a right-to-left
// override), no invalid UTF-8, at most 200 characters.
func displayText(s string) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n == 200 {
			b.WriteString("…")
			break
		}
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			r = '\uFFFD'
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

func caName(c *x509.Certificate) string {
	if c.Subject.CommonName != "" {
		return displayText(c.Subject.CommonName)
	}
	return displayText(c.Subject.String())
}

// pageFor is the page of a client refused for reason, at now, that
// presented cert (nil for none), refused by the judge with why (nil when
// the reason is not the certificate's own).
func (p *Proxy) pageFor(reason string, cert *x509.Certificate, why *VerifyError, now time.Time) *refusalPage {
	pg := &refusalPage{Status: refusalStatus(reason), Reason: reason, Time: pageTime(now),
		HelpURL: p.cfg.HelpURL, HelpText: "Get a client certificate", CertificateTitle: "The certificate your browser presented"}
	issuer := ""
	if cert != nil {
		issuer = displayText(cert.Issuer.CommonName)
		if issuer == "" {
			issuer = displayText(cert.Issuer.String())
		}
		pg.Cert = &seenCert{CN: displayText(cert.Subject.CommonName), Serial: identity.SerialHex(cert.SerialNumber),
			Issuer: issuer, NotBefore: pageTime(cert.NotBefore), NotAfter: pageTime(cert.NotAfter)}
	} else {
		// Only no-certificate and the CRL's reasons come without one; a
		// blank one keeps any other from failing.
		cert = &x509.Certificate{SerialNumber: new(big.Int)}
	}
	const restart = restartAdvice
	switch reason {
	case ReasonNoCertificate:
		pg.Title = "No client certificate"
		pg.Message = "This site lets in only people and devices whose browser presents a client certificate, and yours presented none."
		pg.Advice = "If you have a certificate, install it in this browser (or in your system's certificate store)." + restart +
			" Browsers do not offer a certificate that has expired: if yours has, renew it. If you have none, ask for one."
	case ReasonExpired:
		pg.Title = "Your certificate has expired"
		pg.Message = "Your client certificate expired on " + pageTime(cert.NotAfter) + "."
		if !now.After(cert.NotAfter) {
			pg.Title = "A certificate authority of your certificate has expired"
			pg.Message = "Your certificate is within its dates, but a certificate authority above it has expired."
		}
		pg.Advice = "Renew your certificate, or ask for a new one, and install it." + restart
		pg.HelpText = "Renew your certificate"
	case ReasonNotYetValid:
		pg.Title = "Your certificate is not valid yet"
		pg.Message = "Your client certificate is valid from " + pageTime(cert.NotBefore) + " only; it is now " + pageTime(now) + "."
		pg.Advice = "If the certificate was issued a moment ago, try again in a minute. Otherwise ask for a new certificate: this one starts in the future."
	case ReasonRevoked:
		pg.Title = "Your certificate has been revoked"
		pg.Message = "Your client certificate has been revoked."
		if e := why.revocation(); e != nil && e.Serial != nil {
			if e.Serial.Cmp(cert.SerialNumber) == 0 {
				pg.Message = "Your client certificate was revoked on " + pageTime(e.RevokedAt) + " (reason: " + e.Reason.String() + ")."
			} else {
				pg.Message = "A certificate authority above your certificate (serial " + identity.SerialHex(e.Serial) + ") was revoked on " +
					pageTime(e.RevokedAt) + " (reason: " + e.Reason.String() + "), and with it every certificate under it."
			}
		}
		pg.Advice = "It cannot be used any more: ask for a new certificate and install it." + restart + " If you did not expect this, tell your administrator."
		pg.HelpText = "Get a new certificate"
	case ReasonUnknownCA:
		pg.Title = "Certificate of an unknown authority"
		pg.Message = "Your browser presented a certificate issued by “" + issuer + "”, which this site does not accept. It accepts certificates of: " + p.acceptedCAs() + "."
		pg.Advice = "Your browser may have chosen the wrong certificate." + restart + " When it asks, choose a certificate of the authorities above. If you have none, ask for one."
	case ReasonWrongEKU, ReasonNoEKU, ReasonCACertificate:
		pg.Title = "Not a client certificate"
		switch reason {
		case ReasonWrongEKU:
			pg.Message = "The certificate your browser presented is not meant for signing in: its extended key usage does not include client authentication (clientAuth)."
		case ReasonNoEKU:
			pg.Message = "The certificate your browser presented is not marked for signing in: it has no extended key usage, and client authentication (clientAuth) is required."
		default:
			pg.Message = "The certificate your browser presented is a certificate authority's, not a person's or a device's."
		}
		pg.Advice = "Choose your client certificate when the browser asks." + restart + " If you have none, ask for one."
	case ReasonNotAllowed:
		pg.Title = "Not allowed here"
		pg.Message = "Your certificate is valid, but it does not give access to this page."
		pg.Advice = "If you need access, ask the owner of this site to grant it to the certificate below."
		pg.CertificateTitle = "Your certificate"
		pg.HelpURL = "" // a new certificate would not help
	case ReasonCRLExpired, ReasonCRLNotYetValid, ReasonNoCRL, string(revoke.ReasonCRLMissing):
		pg.Service = true
		pg.HelpURL = ""
		pg.Title = "This site cannot check certificates right now"
		pg.Message = p.crlMessage(reason, now)
		pg.Advice = "This is the site's fault, not yours: nothing is known to be wrong with your certificate. Try again later; if this lasts, tell the site's administrator, with the reason code below."
	default: // bad-chain, and too-few-days-left before route
		pg.Title = "Your certificate was not accepted"
		pg.Message = "Your client certificate could not be verified."
		pg.Advice = "Ask for a new certificate and install it." + restart
	}
	return pg
}

// route says which route of the policy refused the client, and for a rule
// that wants more days left, how many.
func (pg *refusalPage) route(d *policy.Decision, cert *x509.Certificate, now time.Time) {
	if d.Route == nil {
		return
	}
	name := "“" + displayText(d.Route.Name) + "”"
	switch {
	case d.Reason == ReasonDaysLeft && d.Route.Rule != nil:
		pg.Title = "Your certificate expires too soon for this page"
		pg.Message = "Your certificate is valid until " + pageTime(cert.NotAfter) + ", " + strconv.Itoa(identity.DaysLeft(cert.NotAfter, now)) +
			" days from now; this part of the site (" + name + ") wants at least " + strconv.Itoa(d.Route.Rule.MinDaysLeft) + " days left."
		pg.Advice = "Renew your certificate and install the new one." + restartAdvice
		pg.HelpText = "Renew your certificate" // pageFor kept HelpURL for this reason
	default:
		pg.Message = "Your certificate is valid, but the rules of this part of the site (" + name + ") do not let it in."
	}
}

// revocation is the CRL entry of a revoked verdict, or nil.
func (e *VerifyError) revocation() *revoke.Entry {
	if e == nil {
		return nil
	}
	return e.Revocation
}

// acceptedCAs names the CAs of the bundle whose clients the proxy accepts.
func (p *Proxy) acceptedCAs() string {
	t := p.trust.Load()
	names := make([]string, 0, len(t.cas))
	for i, c := range t.cas {
		if i == 5 {
			names = append(names, "…")
			break
		}
		names = append(names, "“"+caName(c)+"”")
	}
	return strings.Join(names, ", ")
}

// crlMessage says why the proxy cannot check certificates at now.
func (p *Proxy) crlMessage(reason string, now time.Time) string {
	t := p.trust.Load()
	switch reason {
	case ReasonCRLExpired:
		for _, c := range t.crls {
			if crlState(c.CRL, p.cfg.CRLGrace, now) == revoke.Expired {
				return "Its list of revoked certificates expired on " + pageTime(c.CRL.NextUpdate()) +
					" and no fresh one has come since, so it lets nobody in until one does."
			}
		}
		return "Its list of revoked certificates has expired, so it lets nobody in until a fresh one comes."
	case ReasonCRLNotYetValid:
		return "Its clock is behind its list of revoked certificates, so it lets nobody in until that is put right."
	}
	return "It has no list of revoked certificates of the authority that issued your certificate, so it cannot tell whether yours is revoked."
}

// wantsHTML reports whether r's Accept header asks for HTML (text/html or
// application/xhtml+xml with a non-zero quality), as browsers' do.
func wantsHTML(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(v, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil || mt != "text/html" && mt != "application/xhtml+xml" {
				continue
			}
			if q, ok := params["q"]; ok {
				if f, err := strconv.ParseFloat(q, 64); err != nil || f <= 0 {
					continue
				}
			}
			return true
		}
	}
	return false
}

// writeRefusal answers with pg: HTML for a browser, else plain text; never
// cached, never framed, nothing loaded but the page's own style.
func writeRefusal(w http.ResponseWriter, r *http.Request, pg *refusalPage) {
	var buf bytes.Buffer
	ctype := "text/plain; charset=utf-8"
	if wantsHTML(r) && refusalTemplate().Execute(&buf, pg) == nil {
		ctype = "text/html; charset=utf-8"
	} else {
		buf.Reset()
		pg.writeText(&buf)
	}
	h := w.Header()
	h.Set(RefusalHeader, pg.Reason)
	h.Set("Content-Type", ctype)
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	pagesec.SetHeaders(h, refusalCSP)
	h.Set("Vary", "Accept")
	w.WriteHeader(pg.Status)
	w.Write(buf.Bytes())
}

// writeText writes pg as plain text, for clients other than browsers.
func (pg *refusalPage) writeText(w io.Writer) {
	fmt.Fprintf(w, "%s (%s)\n\n%s\n\nWhat to do: %s\n", pg.Title, pg.Reason, pg.Message, pg.Advice)
	if c := pg.Cert; c != nil {
		fmt.Fprintf(w, "\nCertificate presented: CN %q, serial %s, issued by %q, valid from %s until %s\n",
			c.CN, c.Serial, c.Issuer, c.NotBefore, c.NotAfter)
	}
	if pg.HelpURL != "" {
		fmt.Fprintf(w, "%s: %s\n", pg.HelpText, pg.HelpURL)
	}
	fmt.Fprintf(w, "\nReason code %s at %s.\n", pg.Reason, pg.Time)
}

// refusalCSS is the whole style of the refusal pages, allowed by its hash
// in the Content-Security-Policy: the pages load nothing and run no script.
const refusalCSS = `body{font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;background:#f4f5f7;color:#1d2330}
main{max-width:40rem;margin:2rem auto;background:#fff;padding:1.5rem 2rem;border-radius:8px;box-shadow:0 1px 3px #0002;border-top:6px solid #c62828}
main.service{border-top-color:#e0a100}
h1{font-size:1.4rem;margin:.2rem 0 .8rem}h2{font-size:1.05rem;margin:1.2rem 0 .3rem}
.code{color:#5a6270;font:.85rem ui-monospace,Menlo,Consolas,monospace;margin:0}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem;margin:.4rem 0}dt{color:#5a6270}dd{margin:0;word-break:break-all}
a.help{display:inline-block;margin:.6rem 0;padding:.5rem 1rem;border-radius:6px;background:#2f6ae0;color:#fff;text-decoration:none}
.note{color:#5a6270;font-size:.85rem;margin-top:1.4rem}code{font-family:ui-monospace,Menlo,Consolas,monospace}`

// refusalCSP is the Content-Security-Policy of every refusal page.
var refusalCSP = pagesec.CSP(refusalCSS, "'none'")

// refusalTemplate is the refusal page, parsed at its first use rather than
// at every start of the minica binary.
var refusalTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("refusal").Parse(refusalHTML))
})

const refusalHTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer"><title>{{.Title}}</title><style>` + refusalCSS + `</style></head>
<body><main{{if .Service}} class="service"{{end}}>
<p class="code">{{.Status}} · {{.Reason}}</p>
<h1 id="title">{{.Title}}</h1>
<p id="message">{{.Message}}</p>
<h2>What to do</h2>
<p id="advice">{{.Advice}}</p>
{{- if .HelpURL}}
<p><a class="help" id="help" href="{{.HelpURL}}" rel="noreferrer">{{.HelpText}}</a></p>
{{- end}}
{{- with .Cert}}
<h2>{{$.CertificateTitle}}</h2>
<dl id="cert"><dt>Name (CN)</dt><dd>{{.CN}}</dd><dt>Serial</dt><dd>{{.Serial}}</dd><dt>Issued by</dt><dd>{{.Issuer}}</dd>
<dt>Valid from</dt><dd>{{.NotBefore}}</dd><dt>Valid until</dt><dd>{{.NotAfter}}</dd></dl>
{{- end}}
<p class="note">Reason code <code>{{.Reason}}</code> at {{.Time}}. Quote it if you ask for help.</p>
</main></body></html>
`

package enroll

import (
	"encoding/base64"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"minica/ca"
	"minica/internal/pagesec"
)

// pageCSS is the whole style of the enrollment pages, allowed by its hash
// in the Content-Security-Policy: the pages load nothing else and run no
// script.
const pageCSS = `body{font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;background:#f4f5f7;color:#1d2330}
main{max-width:40rem;margin:2rem auto;background:#fff;padding:1.5rem 2rem;border-radius:8px;box-shadow:0 1px 3px #0002}
h1{font-size:1.4rem;margin-top:0}h2{font-size:1.1rem;margin-bottom:.3rem}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem}dt{color:#5a6270}dd{margin:0;word-break:break-all}
label{display:block;margin:.6rem 0 .2rem}input[type=password]{width:100%;padding:.5rem;font-size:1rem;box-sizing:border-box}
fieldset{border:1px solid #d5d9e0;border-radius:6px;margin:1rem 0}fieldset label{display:flex;gap:.5rem;align-items:baseline}
button{font-size:1rem;padding:.6rem 1.2rem;margin:.8rem .5rem 0 0;border-radius:6px;border:1px solid #2456b3;background:#2f6ae0;color:#fff}
button.alt{background:#fff;color:#2456b3}
.err{background:#fde8e8;border-left:4px solid #c62828;padding:.5rem 1rem}
.pw{font:1.4rem/1.6 ui-monospace,Menlo,Consolas,monospace;background:#fff8e1;padding:.6rem 1rem;border-radius:6px;letter-spacing:.05em;word-break:break-all}
.note{color:#5a6270;font-size:.9rem}
a.save{display:inline-block;font-size:1.1rem;padding:.7rem 1.4rem;border-radius:6px;background:#2f6ae0;color:#fff;text-decoration:none}
.warn{background:#fff8e1;border-left:4px solid #b26a00;padding:.5rem 1rem}ol{padding-left:1.3rem}details{margin-top:.6rem}summary{cursor:pointer}`

// pageCSP is the Content-Security-Policy of every enrollment response.
var pageCSP = pagesec.CSP(pageCSS, "'self'")

// pageTemplate is the page of every answer, parsed at its first use rather
// than at every start of the minica binary.
var pageTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("page").Parse(pageHTML))
})

const pageHTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin"><title>{{.Title}}</title><style>` + pageCSS + `</style></head>
<body><main>
<h1>{{.Title}}</h1>
{{- if eq .Kind "form" "generated" "ready"}}
<dl><dt>For</dt><dd id="cn">{{.CN}}</dd>{{range .Emails}}<dt>Email</dt><dd>{{.}}</dd>{{end}}
<dt>Issued by</dt><dd id="ca">{{.CAName}}</dd><dt>Certificate valid</dt><dd id="validity">{{.Validity}}</dd>
{{- if eq .Kind "ready"}}<dt>File</dt><dd id="file">{{.File}}</dd>{{else}}<dt>Link expires</dt><dd>{{.Expires}}</dd>{{end}}</dl>
{{- if .Error}}<p class="err" id="error">{{.Error}}</p>{{end}}
{{- if eq .Kind "ready"}}
<p>Your certificate was issued, and <strong>{{.File}}</strong> holds it with its private key: {{.FormatShort}}.</p>
<p><a class="save" id="save" href="{{.FileURL}}" type="{{.FileType}}" download="{{.File}}">Save {{.File}}</a></p>
<p class="warn">Save it now: the file is on this page only. The server kept no copy and the link is used up, so once you leave this page the file cannot be downloaded again.</p>
<h2>The password</h2>
<p id="password-use">The password you chose on the previous page (or the one generated for you) protects this file: your device asks for it once, when you open (import) {{.File}}.
It is not a password to sign in with: once the certificate is installed, your browser presents it for you. The server does not keep it and no page shows it again; if it is lost, ask for a new link.</p>
{{- else if eq .Kind "generated"}}
<p>Your password for the file is:</p>
<p class="pw" id="generated">{{.Generated}}</p>
<p>Write it down or store it in your password manager now: it is shown only this once, and you need it to install the file.</p>
<form method="post">
<input type="hidden" name="csrf" value="{{.CSRF}}"><input type="hidden" name="action" value="download">
<input type="hidden" name="password" value="{{.Generated}}"><input type="hidden" name="password2" value="{{.Generated}}">
<input type="hidden" name="format" value="{{.Format}}">
<button type="submit" id="download">I have saved the password: download {{.FormatLabel}}</button>
</form>
{{- else}}
<p>This page makes a new key and certificate for you and puts them into one file, protected by a password.
The link works once: after Download it is used up, and the next page saves the file and says how to install it.</p>
<form method="post">
<input type="hidden" name="csrf" value="{{.CSRF}}">
<fieldset><legend>File type</legend>
{{range .Formats}}<label><input type="radio" name="format" value="{{.Value}}"{{if .Checked}} checked{{end}}> {{.Label}}{{if .Recommended}} <strong>(recommended here)</strong>{{end}}</label>
{{end}}</fieldset>
<label for="password">Password for the file (at least {{.MinLength}} characters)</label>
<input type="password" id="password" name="password" minlength="{{.MinLength}}" autocomplete="new-password">
<label for="password2">The same password again</label>
<input type="password" id="password2" name="password2" minlength="{{.MinLength}}" autocomplete="new-password">
<p class="note">Why it matters: the file holds your private key. Anyone who has the file and its password can sign in as you,
so choose a password that you use nowhere else; you will type it once, when you install the file.</p>
<button type="submit" name="action" value="download" id="download">Download</button>
<button type="submit" name="action" value="generate" class="alt" id="generate">Generate a password for me</button>
</form>
{{- end}}
<h2>Installing on {{.Platform}}</h2>
<ol>{{range .Steps}}<li>{{.}}</li>{{end}}</ol>
{{range .Others}}<details><summary>On {{.Name}}</summary><ol>{{range .Steps}}<li>{{.}}</li>{{end}}</ol></details>
{{end}}
{{- else}}
<p id="message">{{.Message}}</p>
{{- end}}
</main></body></html>
`

// pageData is what the template renders.
type pageData struct {
	Kind           string // form, generated, ready, gone, error
	Title, Message string
	Name, CN       string
	Emails         []string
	CAName         string
	Validity       string
	Expires        string
	CSRF           string
	Formats        []formatOption
	MinLength      int
	Error          string
	Generated      string
	Format         bundleFormat
	Platform       string
	Steps          []string
	Others         []platformInfo
	// File, FileURL and FileType: the ready page's bundle, as a data: URL
	// that its link saves under File.
	File     string
	FileURL  template.URL
	FileType string
}

type formatOption struct {
	Value, Label         string
	Checked, Recommended bool
}

// FormatLabel names the chosen file type on the generated-password page.
func (p *pageData) FormatLabel() string { return p.Format.short() }

// FormatShort names the chosen file type in a sentence.
func (p *pageData) FormatShort() string { return p.Format.short() }

// render writes the page p with status code.
func (h *Enroller) render(w http.ResponseWriter, code int, p *pageData) {
	if err := pagesec.WritePage(w, code, pageTemplate(), p); err != nil {
		h.log.Event("enroll-page-error", "error", err.Error())
		http.Error(w, "internal error", http.StatusInternalServerError)
	}
}

// formPage is the page of pending enrollment e for a browser with user
// agent ua, with an error message or "".
func (h *Enroller) formPage(e *ca.Enrollment, ua, errMsg string) *pageData {
	c := h.cfg.CA
	req := e.Request(nil)
	cn := req.CommonName
	if cn == "" {
		cn = e.Name
	}
	validity := time.Duration(req.Validity)
	if validity == 0 {
		validity = time.Duration(c.Settings.ClientValidity)
	}
	// A leaf never outlives its CA: say the date it will really end.
	until := h.cfg.Now().Add(validity)
	if until.After(c.Cert.NotAfter) {
		until = c.Cert.NotAfter
	}
	plat := detectPlatform(ua)
	p := &pageData{
		Kind: "form", Title: "Your certificate from " + c.Cert.Subject.CommonName,
		Name: e.Name, CN: cn, Emails: req.Emails, CAName: c.Cert.Subject.CommonName,
		Validity: "for " + humanDuration(validity) + " from the download, until about " + until.UTC().Format("2 January 2006"),
		Expires:  e.ExpiresAt.UTC().Format("2 January 2006, 15:04 UTC"),
		CSRF:     csrfToken(e), MinLength: h.cfg.MinPasswordLength, Error: errMsg,
		Format: plat.first, Platform: plat.Name, Steps: plat.with(e.Name + plat.first.suffix()).Steps,
	}
	order := append([]bundleFormat{plat.first}, bundleFormats...)
	seen := map[bundleFormat]bool{}
	for _, f := range order {
		if !seen[f] {
			seen[f] = true
			p.Formats = append(p.Formats, formatOption{Value: f.String(), Label: f.label(), Checked: f == plat.first, Recommended: f == plat.first})
		}
	}
	for _, o := range platforms {
		if o.Name != plat.Name {
			p.Others = append(p.Others, o.with(e.Name+o.first.suffix()))
		}
	}
	return p
}

// readyPage is the page that answers a browser's Download: the file was
// made, its name, the link that saves it (body, as a data: URL: the
// server keeps no copy), what its password is for, and how to open it on
// the device of ua and on the others, naming that file.
func (h *Enroller) readyPage(e *ca.Enrollment, issued *ca.Issued, ua string, f bundleFormat, body []byte) *pageData {
	p := h.formPage(e, ua, "")
	file := e.Name + f.suffix()
	cert := issued.Cert
	p.Kind, p.Title = "ready", "Your certificate is ready"
	p.Format, p.File, p.FileType = f, file, f.contentType()
	p.FileURL = template.URL("data:" + f.contentType() + ";base64," + base64.StdEncoding.EncodeToString(body))
	p.Validity = "until " + cert.NotAfter.UTC().Format("2 January 2006") + " (" + humanDuration(cert.NotAfter.Sub(cert.NotBefore).Round(time.Hour)) + ")"
	p.Steps = detectPlatform(ua).with(file).Steps
	for i, o := range p.Others {
		p.Others[i] = platformByName(o.Name).with(file)
	}
	return p
}

// humanDuration says d as a person would: years, days or hours when it is
// a whole number of them, else in minica's duration syntax.
func humanDuration(d time.Duration) string {
	unit := func(n int64, one string) string {
		if n == 1 {
			return "1 " + one
		}
		return strconv.FormatInt(n, 10) + " " + one + "s"
	}
	day := 24 * time.Hour
	switch {
	case d > 0 && d%(365*day) == 0:
		return unit(int64(d/(365*day)), "year")
	case d > 0 && d%day == 0:
		return unit(int64(d/day), "day")
	case d > 0 && d%time.Hour == 0:
		return unit(int64(d/time.Hour), "hour")
	}
	return ca.FormatDuration(d)
}

// choose makes f the checked file type.
func (p *pageData) choose(f bundleFormat) {
	p.Format = f
	for i := range p.Formats {
		p.Formats[i].Checked = p.Formats[i].Value == f.String()
	}
}

// platformInfo is what the page says to a device: the file type that
// installs there and how. FILE in a step stands for the file's name.
type platformInfo struct {
	Name  string
	first bundleFormat
	Steps []string
}

// with returns p with FILE in its steps replaced by file.
func (p platformInfo) with(file string) platformInfo {
	steps := make([]string, len(p.Steps))
	for i, s := range p.Steps {
		steps[i] = strings.ReplaceAll(s, "FILE", file)
	}
	p.Steps = steps
	return p
}

// platformByName returns the platform called name.
func platformByName(name string) platformInfo {
	for _, p := range platforms {
		if p.Name == name {
			return p
		}
	}
	return platforms[len(platforms)-1]
}

var platforms = []platformInfo{
	{"iPhone and iPad", bundleMobileconfig, []string{
		"In Safari, tap Allow when it offers to download FILE (or open FILE from the Files app).",
		"Open Settings: tap \"Profile Downloaded\" near the top, then Install, and enter your passcode and the file's password.",
		"For websites served with this CA: Settings › General › About › Certificate Trust Settings, and turn the CA on.",
	}},
	{"Android", bundleP12Compat, []string{
		"Settings › Security › Encryption & credentials › Install a certificate › VPN & app user certificate (the names vary by maker); pick FILE from Downloads and enter the file's password.",
		"Chrome offers the certificate when a site asks for one.",
	}},
	{"Windows", bundleP12, []string{
		"Open FILE from your Downloads folder. (Windows 8.1 and older, Windows Server 2016 and older need the certificate file for older systems, whose name ends in -compat.p12.)",
		"In the Certificate Import Wizard keep \"Current User\", enter the file's password and let Windows choose the store.",
		"Edge and Chrome use it from there; Firefox: Settings › Privacy & Security › View Certificates › Your Certificates › Import, and pick FILE.",
	}},
	{"macOS", bundleP12Compat, []string{
		"Open FILE from your Downloads folder: Keychain Access imports it into the login keychain once you enter the file's password.",
		"Safari and Chrome use it from there; Firefox: Settings › Privacy & Security › View Certificates › Your Certificates › Import, and pick FILE.",
		"Or take the Apple profile: open it, then System Settings › Privacy & Security › Profiles, and Install.",
	}},
	{"Linux and ChromeOS", bundleP12, []string{
		"Chrome or Chromium: Settings › Privacy and security › Security › Manage certificates › Import, and pick FILE from Downloads; Firefox: Settings › Privacy & Security › View Certificates › Your Certificates › Import.",
		"Or from a shell: pk12util -i ~/Downloads/FILE -d sql:$HOME/.pki/nssdb",
	}},
}

// detectPlatform picks the platform of a User-Agent; an unknown one is
// treated as a desktop (Linux), which takes the .p12 for current systems.
func detectPlatform(ua string) platformInfo {
	has := func(s ...string) bool {
		for _, x := range s {
			if strings.Contains(ua, x) {
				return true
			}
		}
		return false
	}
	switch {
	case has("iPhone", "iPad", "iPod"):
		return platforms[0]
	case has("Android"):
		return platforms[1]
	case has("Windows NT 6.", "Windows NT 5."):
		w := platforms[2]
		w.first = bundleP12Compat
		return w
	case has("Windows"):
		return platforms[2]
	case has("Macintosh", "Mac OS X"):
		return platforms[3]
	}
	return platforms[4]
}

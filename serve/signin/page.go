package signin

import (
	"html/template"
	"net/http"
	"sync"

	"minica/internal/pagesec"
)

// pageCSS is the whole style of the sign-in pages, allowed by its hash in
// the Content-Security-Policy: the pages load nothing else and run no
// script.
const pageCSS = `body{font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;background:#f4f5f7;color:#1d2330}
main{max-width:46rem;margin:2rem auto;background:#fff;padding:1.5rem 2rem;border-radius:8px;box-shadow:0 1px 3px #0002}
h1{font-size:1.4rem;margin-top:0}h2{font-size:1.1rem;margin-bottom:.3rem}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.4rem .5rem;border-bottom:1px solid #e3e6eb;vertical-align:top}
form.inline{display:inline}select,input[type=text]{font-size:1rem;padding:.4rem}input[type=text]{width:60%}
button,a.button{font-size:1rem;padding:.5rem 1rem;margin:.3rem .3rem 0 0;border-radius:6px;border:1px solid #2456b3;background:#2f6ae0;color:#fff;text-decoration:none;display:inline-block}
button.alt{background:#fff;color:#2456b3}button.danger{background:#fff;color:#b3261e;border-color:#b3261e}
.err{background:#fde8e8;border-left:4px solid #c62828;padding:.5rem 1rem}.ok{background:#e8f5e9;border-left:4px solid #2e7d32;padding:.5rem 1rem}
.note{color:#5a6270;font-size:.9rem}`

// pageCSP is the Content-Security-Policy of every sign-in answer.
var pageCSP = pagesec.CSP(pageCSS, "'self'")

var pageTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("page").Parse(pageHTML))
})

// The pages keep their markup plain and every element a test or a person
// refers to has a stable id.
const pageHTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin"><title>{{.Title}}</title><style>` + pageCSS + `</style></head>
<body><main id="{{.Kind}}">
<h1 id="title">{{.Title}}</h1>
{{- if eq .Kind "start"}}
<p id="intro">Sign in with your company account to get a certificate for each of your devices, and to see, renew or revoke the ones you have.</p>
<p><a class="button" id="signin" href="/signin/login">Sign in with {{.Provider}}</a>
{{- if .SignedIn}} <a class="button" id="devices-link" href="/signin/devices">My certificates</a>{{end}}</p>
{{- else if eq .Kind "signedout"}}
<p id="message">{{.Message}}</p>
<p><a class="button" id="signin" href="/signin/login">Sign in with {{.Provider}}</a></p>
{{- else if eq .Kind "devices"}}
<p id="who">Signed in as <strong id="cn">{{.CN}}</strong> (<span id="email">{{.Email}}</span>) until {{.SessionEnds}}.</p>
{{- if .Error}}<p class="err" id="error">{{.Error}}</p>{{end}}
{{- if .Notice}}<p class="ok" id="notice">{{.Notice}}</p>{{end}}
{{- if .Devices}}
<table id="device-list"><thead><tr><th>Device</th><th>Issued</th><th>Expires</th><th>Status</th><th></th></tr></thead><tbody>
{{- range .Devices}}
<tr id="device-{{.Serial}}"><td class="label">{{.Label}}</td><td class="issued">{{.Issued}}</td><td class="expires">{{.Expires}}</td><td class="status">{{.Status}}</td><td>
{{- if .Valid}}
<form class="inline" method="post" action="/signin/devices/renew"><input type="hidden" name="csrf" value="{{$.CSRF}}"><input type="hidden" name="serial" value="{{.Serial}}"><button type="submit" class="alt" id="renew-{{.Serial}}">Renew</button></form>
<form class="inline" method="post" action="/signin/devices/revoke"><input type="hidden" name="csrf" value="{{$.CSRF}}"><input type="hidden" name="serial" value="{{.Serial}}">
<select name="reason" id="reason-{{.Serial}}" aria-label="Why">{{range $.Reasons}}<option value="{{.Value}}">{{.Label}}</option>{{end}}</select>
<button type="submit" class="danger" id="revoke-{{.Serial}}">Revoke</button></form>
{{- end}}</td></tr>
{{- end}}
</tbody></table>
{{- else}}
<p id="no-devices">You have no device certificates yet.</p>
{{- end}}
<h2>Add a device</h2>
<p class="note" id="limit">You hold {{.ValidCount}} valid device {{if eq .ValidCount 1}}certificate{{else}}certificates{{end}}, of at most {{.MaxDevices}}. Each device gets its own certificate and key: name it so that you know it later.</p>
<form method="post" action="/signin/devices/add" id="add-form"><input type="hidden" name="csrf" value="{{.CSRF}}">
<label for="device">Device name</label> <input type="text" id="device" name="device" maxlength="64" required placeholder="Simon's laptop">
<button type="submit" id="add">Get a certificate</button></form>
<p class="note">The next page makes the key and certificate, asks for a password to protect the file, and says how to install it.</p>
<form method="post" action="/signin/logout" id="signout-form"><input type="hidden" name="csrf" value="{{.CSRF}}"><button type="submit" class="alt" id="signout">Sign out</button></form>
{{- else}}
<p id="message">{{.Message}}</p>
{{- if .Contact}}<p id="contact">Whom to ask: {{.Contact}}</p>{{else if eq .Kind "refused"}}<p id="contact">Ask your administrator.</p>{{end}}
{{- if .Retry}}<p><a class="button" id="start" href="/">Back to the start page</a></p>{{end}}
{{- if .Back}}<p><a class="button" id="devices-link" href="/signin/devices">My certificates</a></p>{{end}}
{{- end}}
</main></body></html>
`

// pageData is what the template renders.
type pageData struct {
	Kind           string // start, signedout, devices, refused, error
	Title, Message string
	Provider       string
	SignedIn       bool
	Contact        string
	Retry, Back    bool
	Email, CN      string
	CSRF           string
	Error, Notice  string
	MaxDevices     int
	ValidCount     int
	SessionEnds    string
	Devices        []deviceRow
}

// deviceRow is a device on My certificates.
type deviceRow struct {
	Serial, Label, Issued, Expires, Status string
	Valid                                  bool // renew and revoke are offered
}

// Reasons are the choices of the revoke form.
func (p *pageData) Reasons() []struct{ Value, Label string } { return reasonOptions }

// render writes the page p with status code.
func (h *Handler) render(w http.ResponseWriter, code int, p *pageData) {
	if err := pagesec.WritePage(w, code, pageTemplate(), p); err != nil {
		h.log.Event("signin-page-error", "error", err.Error())
		http.Error(w, "internal error", http.StatusInternalServerError)
	}
}

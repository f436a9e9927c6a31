package testidp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/net/html"
)

// loginPath is where zitadel's example storage sends the browser to sign
// in (the LoginURL of its clients).
const loginPath = "/login/username"

// loginForm is the page of the package doc's "The login form".
var loginForm = template.Must(template.New("login").Parse(`<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>Sign in: test identity provider</title></head>
<body>
<h1>Sign in</h1>
<form id="login" method="post" action="` + loginPath + `">
<input type="hidden" name="id" value="{{.ID}}">
<p><label for="username">Username</label> <input id="username" name="username" autocomplete="username"></p>
<p><label for="password">Password</label> <input id="password" name="password" type="password" autocomplete="current-password"></p>
{{with .Error}}<p id="error" role="alert">{{.}}</p>{{end}}
<p><button id="submit" type="submit">Sign in</button></p>
</form>
</body>
</html>
`))

// loginPage serves the login form (GET) and checks what it posts (POST),
// then sends the browser back to zitadel's authorization callback.
type loginPage struct {
	store    *store
	callback func(context.Context, string) string
	check    http.Handler
}

func newLoginPage(s *store, provider *op.Provider) *loginPage {
	l := &loginPage{store: s, callback: op.AuthCallbackURL(provider)}
	// The callback URL is built from the issuer that the interceptor puts in
	// the request's context.
	l.check = op.NewIssuerInterceptor(provider.IssuerFromRequest).HandlerFunc(l.submit)
	return l
}

func (l *loginPage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		render(w, r.URL.Query().Get("authRequestID"), "")
	case http.MethodPost:
		l.check.ServeHTTP(w, r)
	default:
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

func (l *loginPage) submit(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "cannot read the form: "+err.Error(), http.StatusBadRequest)
		return
	}
	id := r.PostFormValue("id")
	if err := l.store.CheckUsernamePassword(r.PostFormValue("username"), r.PostFormValue("password"), id); err != nil {
		render(w, id, err.Error())
		return
	}
	http.Redirect(w, r, l.callback(r.Context(), id), http.StatusFound)
}

func render(w http.ResponseWriter, id, reason string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := loginForm.Execute(w, struct{ ID, Error string }{id, reason}); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// Limits of Login: redirects followed in one step, bytes read of one page,
// and the time of one request when c has no Timeout.
const (
	maxRedirects  = 10
	maxPageBytes  = 1 << 20
	defaultLimit  = 30 * time.Second
	reasonUnknown = "no reason on the page"
)

// Login signs username in as a browser would, without one: it follows
// authURL (the relying party's redirect to the provider, with state, nonce
// and PKCE challenge) with c, fills and submits the login form by its
// element ids, and returns the provider's redirect back to the relying
// party (with code and state) WITHOUT following it. If the provider
// redirects back before the form (an error answer), that redirect is
// returned. c's jar is used; its Timeout, if 0, is 30 seconds per request.
func (p *Provider) Login(c *http.Client, authURL, username, password string) (callback *url.URL, err error) {
	u, err := url.Parse(authURL)
	if err != nil {
		return nil, fmt.Errorf("parsing the authorization URL: %w", err)
	}
	if !p.owns(u) {
		return nil, fmt.Errorf("authorization URL %q is not at the provider %s", authURL, p.issuer)
	}
	browser := p.browser(c)
	resp, err := browser.Get(authURL)
	if err != nil {
		return nil, err
	}
	back, page, err := p.answer(resp)
	if back != nil || err != nil {
		return back, err
	}
	form, err := parseLoginForm(page, resp.Request.URL)
	if err != nil {
		return nil, fmt.Errorf("reading the login page %s: %w", resp.Request.URL, err)
	}
	form.values.Set(form.username, username)
	form.values.Set(form.password, password)
	resp, err = browser.PostForm(form.action, form.values)
	if err != nil {
		return nil, err
	}
	back, page, err = p.answer(resp)
	if back != nil || err != nil {
		return back, err
	}
	return nil, fmt.Errorf("the provider refused the sign-in of %q: %s", username, errorText(page))
}

// owns reports whether u is at the provider.
func (p *Provider) owns(u *url.URL) bool { return u.Scheme == "http" && u.Host == p.host }

// browser is c that follows redirects within the provider only.
func (p *Provider) browser(c *http.Client) *http.Client {
	b := &http.Client{}
	if c != nil {
		*b = *c
	}
	if b.Timeout == 0 {
		b.Timeout = defaultLimit
	}
	b.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if !p.owns(req.URL) {
			return http.ErrUseLastResponse
		}
		if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects within the provider", maxRedirects)
		}
		return nil
	}
	return b
}

// answer reads resp: the redirect away from the provider, or the page of a
// 200; an error for anything else.
func (p *Provider) answer(resp *http.Response) (back *url.URL, page []byte, err error) {
	defer resp.Body.Close()
	page, err = io.ReadAll(io.LimitReader(resp.Body, maxPageBytes))
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", resp.Request.URL, err)
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		back, err := resp.Location()
		if err != nil || p.owns(back) {
			return nil, nil, fmt.Errorf("the provider answered %s at %s with no redirect away from it", resp.Status, resp.Request.URL)
		}
		return back, nil, nil
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("the provider answered %s at %s: %.200s", resp.Status, resp.Request.URL, strings.TrimSpace(string(page)))
	}
	return nil, page, nil
}

// form is a login form read from a page: where to post, its fields, and the
// names of the username and password inputs.
type form struct {
	action             string
	values             url.Values
	username, password string
}

// parseLoginForm reads the form with id "login" from page, at base.
func parseLoginForm(page []byte, base *url.URL) (*form, error) {
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		return nil, err
	}
	node := byID(doc, "login")
	if node == nil || node.Data != "form" {
		return nil, errors.New(`no form with id "login"`)
	}
	action, err := base.Parse(attr(node, "action"))
	if err != nil {
		return nil, fmt.Errorf("form action: %w", err)
	}
	f := &form{action: action.String(), values: url.Values{}}
	for n := range node.Descendants() {
		if n.Type != html.ElementNode || n.Data != "input" || attr(n, "name") == "" {
			continue
		}
		name := attr(n, "name")
		f.values.Set(name, attr(n, "value"))
		switch attr(n, "id") {
		case "username":
			f.username = name
		case "password":
			f.password = name
		}
	}
	if f.username == "" || f.password == "" {
		return nil, errors.New(`the form lacks a named input with id "username" or "password"`)
	}
	return f, nil
}

// errorText is the text of the element with id "error" in page.
func errorText(page []byte) string {
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		return reasonUnknown
	}
	node := byID(doc, "error")
	if node == nil {
		return reasonUnknown
	}
	var text strings.Builder
	for n := range node.Descendants() {
		if n.Type == html.TextNode {
			text.WriteString(n.Data)
		}
	}
	return strings.TrimSpace(text.String())
}

func byID(doc *html.Node, id string) *html.Node {
	for n := range doc.Descendants() {
		if n.Type == html.ElementNode && attr(n, "id") == id {
			return n
		}
	}
	return nil
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

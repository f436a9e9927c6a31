package validate

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
)

const userAgent = "minica-acme-validator"

// HTTP01 validates an http-01 challenge (RFC 8555 section 8.3) of id: the
// body of http://ID:HTTPPort/.well-known/acme-challenge/TOKEN, without
// trailing whitespace, must be keyAuthorization. Redirects are followed
// as the package doc says. It returns nil when valid, else an *Error.
func (v *Validator) HTTP01(ctx context.Context, id Identifier, token, keyAuthorization string) error {
	t, err := targetOf(id)
	if err != nil {
		return err
	}
	if !isBase64URL(token) {
		return &Error{Type: TypeMalformed, Detail: fmt.Sprintf("http-01 token %q: want base64url characters only", token)}
	}
	ctx, cancel := v.bound(ctx)
	defer cancel()
	u := url.URL{
		Scheme: "http",
		Host:   net.JoinHostPort(t.host, strconv.Itoa(v.cfg.HTTPPort)),
		Path:   "/.well-known/acme-challenge/" + token,
	}
	body, from, err := v.fetch(ctx, u.String())
	if err != nil {
		return err
	}
	if got := bytes.TrimRight(body, " \t\r\n"); string(got) != keyAuthorization {
		return &Error{Type: TypeIncorrectResponse,
			Detail: fmt.Sprintf("%s answered %q; want the key authorization %q", from, clip(got), keyAuthorization)}
	}
	return nil
}

// fetch GETs u and returns the body of the 200 answer and the URL that
// gave it, after redirects. It never reads more than MaxBody+1 bytes.
func (v *Validator) fetch(ctx context.Context, u string) (body []byte, from string, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, u, &Error{Type: TypeMalformed, Detail: fmt.Sprintf("http-01 URL %s: %v", u, err), Err: err}
	}
	req.Header.Set("User-Agent", userAgent)
	resp, err := v.client.Do(req)
	if err != nil {
		return nil, u, v.failure(ctx, TypeConnection, "fetching "+u, err)
	}
	defer resp.Body.Close()
	from = resp.Request.URL.String()
	if resp.StatusCode != http.StatusOK {
		return nil, from, &Error{Type: TypeUnauthorized, Detail: fmt.Sprintf("%s answered %q; want 200 OK", from, resp.Status)}
	}
	body, err = io.ReadAll(io.LimitReader(resp.Body, v.cfg.MaxBody+1))
	if err != nil {
		return nil, from, v.failure(ctx, TypeConnection, "reading the body of "+from, err)
	}
	if int64(len(body)) > v.cfg.MaxBody {
		return nil, from, &Error{Type: TypeIncorrectResponse,
			Detail: fmt.Sprintf("%s answered more than %d bytes; want a key authorization", from, v.cfg.MaxBody)}
	}
	return body, from, nil
}

// checkRedirect is the http.Client's judge of a redirect to req: no loop,
// at most MaxRedirects, only http on HTTPPort or https on TLSPort.
func (v *Validator) checkRedirect(req *http.Request, via []*http.Request) error {
	to, from := req.URL.String(), via[len(via)-1].URL.String()
	for _, r := range via {
		if r.URL.String() == to {
			return redirectError("%s redirects to %s, a loop", from, to)
		}
	}
	if len(via) > v.cfg.MaxRedirects {
		return redirectError("%s redirects to %s: more than %d redirects", from, to, v.cfg.MaxRedirects)
	}
	want := map[string]int{"http": v.cfg.HTTPPort, "https": v.cfg.TLSPort}[req.URL.Scheme]
	if want == 0 {
		return redirectError("%s redirects to %s: want an http or https URL", from, to)
	}
	if port := urlPort(req.URL); port != want {
		return redirectError("%s redirects to %s: port %d; want %s on port %d only", from, to, port, req.URL.Scheme, want)
	}
	return nil
}

func redirectError(format string, args ...any) *Error {
	return &Error{Type: TypeConnection, Detail: fmt.Sprintf(format, args...)}
}

// urlPort is the port u connects to, -1 when it is not a number.
func urlPort(u *url.URL) int {
	p := u.Port()
	if p == "" {
		return map[string]int{"http": 80, "https": 443}[u.Scheme]
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return -1
	}
	return int(n)
}

func isBase64URL(s string) bool {
	for _, r := range s {
		if notLDH(r) {
			return false
		}
	}
	return s != ""
}

// clip is b cut to a length a person can read in an error.
func clip(b []byte) string {
	const n = 100
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// newHTTPClient is the client of http-01: no proxy, no connection reuse,
// no certificate verification on https redirects (as Let's Encrypt: the
// challenge is proved by the body, not the certificate), redirects judged
// by checkRedirect.
func (v *Validator) newHTTPClient() *http.Client {
	tr := &http.Transport{
		Proxy:                  nil,
		DialContext:            v.dial,
		TLSClientConfig:        &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    v.cfg.TLSTimeout,
		DisableKeepAlives:      true,
		DisableCompression:     true,
		MaxResponseHeaderBytes: 64 << 10,
	}
	return &http.Client{Transport: tr, CheckRedirect: v.checkRedirect}
}

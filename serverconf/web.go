package serverconf

import (
	"bytes"
	"embed"
	"fmt"
	"slices"
	"strings"
	"sync"
	"text/template"
	"time"

	"minica/ca"
	"minica/identity"
)

// Web servers, as Web accepts them.
const (
	Nginx   = "nginx"
	Apache  = "apache"
	HAProxy = "haproxy"
)

// WebServers are the front ends Web writes a configuration for.
var WebServers = []string{Nginx, Apache, HAProxy}

//go:embed templates/*.tmpl
var templates embed.FS

// webTemplates parses the templates on first use, not at every start of
// minica: most commands never print a configuration.
var webTemplates = sync.OnceValue(func() *template.Template {
	return template.Must(template.ParseFS(templates, "templates/*.tmpl"))
})

// webTemplateFile maps a server to its template.
var webTemplateFile = map[string]string{
	Nginx:   "nginx.conf.tmpl",
	Apache:  "apache.conf.tmpl",
	HAProxy: "haproxy.cfg.tmpl",
}

// setHeaders are the identity headers every template sets from the verified
// certificate, in this order; each must be a name of the proxy's minica
// profile (a test checks that the templates set exactly these).
var setHeaders = []string{
	"X-SSL-Client-CN", "X-SSL-Client-Email", "X-SSL-Client-DN", "X-SSL-Client-Serial", "X-SSL-Client-Verify",
}

// identityHeaders are the names of the proxy's minica profile: first those
// the templates set, then the rest in the profile's order.
func identityHeaders() ([]string, error) {
	profile, err := identity.ProfileNames(identity.ProfileMinica)
	if err != nil {
		return nil, fmt.Errorf("reading the proxy's header names: %w", err)
	}
	out := slices.Clone(setHeaders)
	for _, n := range profile {
		if !slices.Contains(setHeaders, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// webData is what the front-end templates read.
type webData struct {
	*Front
	Until    string    // NotAfter, RFC 3339
	Lifetime string    // CRLLifetime, e.g. "7d"
	Unset    []string  // headers to remove
	Server   string    // nginx, apache or haproxy
	SetLines []string  // the lines that set the identity headers (nginx, Apache)
	Omitted  []omitted // headers of the profile left out
}

// Ident is the certificate name as an identifier for map variables and
// HAProxy section names.
func (d webData) Ident() string {
	return strings.NewReplacer(".", "_", "-", "_").Replace(d.Name)
}

// ListenHost is the listen address as Apache's VirtualHost wants it.
func (d webData) ListenHost() string {
	if strings.Contains(d.ListenAddr, ":") {
		return "[" + d.ListenAddr + "]"
	}
	return d.ListenAddr
}

// HAProxyBind is the listen address as HAProxy's bind wants it.
func (d webData) HAProxyBind() string {
	if d.ListenAddr == "" {
		return fmt.Sprintf(":%d", d.ListenPort)
	}
	return d.Listen()
}

// Web returns the configuration of server (one of WebServers) for the front
// end f: a complete, commented file that requires a client certificate of
// the CA, checks the CRL, accepts TLS 1.2+ only and forwards the client
// identity under the header names of `minica proxy`, after removing any copy
// the client sent. It fails for an unknown server or when f.Check does.
func Web(server string, f *Front) (string, error) {
	file, ok := webTemplateFile[server]
	if !ok {
		return "", fmt.Errorf("unknown server %q: want nginx, apache or haproxy", server)
	}
	if err := f.Check(); err != nil {
		return "", err
	}
	d := webData{Front: f, Server: server, Until: f.NotAfter.UTC().Format(time.RFC3339), Lifetime: ca.FormatDuration(f.CRLLifetime)}
	names, err := identityHeaders()
	if err != nil {
		return "", err
	}
	switch server {
	case Nginx, Apache:
		plan, err := planHeaders(server, f)
		if err != nil {
			return "", err
		}
		if d.Unset, err = unsetNames(server, plan); err != nil {
			return "", err
		}
		d.Omitted = plan.omitted
		if server == Nginx {
			d.SetLines = nginxLines(plan, d.Ident())
		} else {
			d.SetLines = apacheLines(plan)
		}
	default:
		d.Unset = append(d.Unset, names...)
		for _, h := range names {
			d.Unset = append(d.Unset, strings.ReplaceAll(h, "-", "_"))
		}
	}
	var b bytes.Buffer
	if err := webTemplates().ExecuteTemplate(&b, file, d); err != nil {
		return "", fmt.Errorf("writing the %s configuration: %w", server, err)
	}
	return b.String(), nil
}

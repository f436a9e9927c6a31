package main

import (
	"embed"

	"strings"
	"sync"
	"text/template"

	"github.com/urfave/cli/v2"
)

//go:embed configtmpl/*.tmpl
var configTemplates embed.FS

// webTemplates parses the templates on first use, not at every start of
// minica: most commands never print a configuration.
var webTemplates = sync.OnceValue(func() *template.Template {
	return template.Must(template.ParseFS(configTemplates, "configtmpl/*.tmpl"))
})

// webTemplateFile maps a server to its template.
var webTemplateFile = map[string]string{
	"nginx":   "nginx.conf.tmpl",
	"apache":  "apache.conf.tmpl",
	"haproxy": "haproxy.cfg.tmpl",
}

// identityHeaders are the names of the default profile of 'minica proxy';
// the generated configurations set the first five and remove all of them,
// in both spellings, from what the client sent.
var identityHeaders = []string{
	"X-SSL-Client-CN", "X-SSL-Client-Email", "X-SSL-Client-DN", "X-SSL-Client-Serial",
	"X-SSL-Client-Verify", "X-SSL-Client-Fingerprint", "X-SSL-Client-Not-After", "X-SSL-Client-Cert",
}

func webConfigCommand(e *env, server string) *cli.Command {
	return &cli.Command{
		Name:        server,
		Usage:       "print a " + server + " configuration for mutual TLS with this CA",
		ArgsUsage:   " ",
		Description: "Example:\n   minica config " + server + " --server-cert app.example.com --upstream http://127.0.0.1:8080 --listen 443",
		Flags:       frontFlags(),
		Action:      func(c *cli.Context) error { return runWebConfig(c, e, server) },
	}
}

// webData is what the front-end templates read.
type webData struct {
	*front
	Unset []string // headers to remove: every identity header, both spellings
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
		return ":" + d.ListenPort
	}
	return d.Listen()
}

func runWebConfig(c *cli.Context, e *env, server string) error {
	f, err := loadFront(c, e)
	if err != nil {
		return err
	}
	d := webData{front: f}
	for _, h := range identityHeaders {
		d.Unset = append(d.Unset, h)
	}
	if server != "nginx" { // nginx drops '_' names itself
		for _, h := range identityHeaders {
			d.Unset = append(d.Unset, strings.ReplaceAll(h, "-", "_"))
		}
	} else {
		d.Unset = d.Unset[5:] // nginx overwrites the first five with proxy_set_header
	}
	return webTemplates().ExecuteTemplate(e.stdout, webTemplateFile[server], d)
}

package serverconf

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"minica/internal/endpoint"
)

// Front is what the configuration of a TLS front end needs: the CA's files,
// the server certificate, where to listen and where to forward. Every path
// is absolute (see Check).
type Front struct {
	Dir         string // the CA directory
	Name        string // the server certificate's name
	Serial      string // hex
	NotAfter    time.Time
	CertFile    string // the leaf alone
	ChainFile   string // the leaf followed by the CA chain
	KeyFile     string
	CAFile      string // the CA chain clients must chain to
	CRLFile     string // PEM
	Depth       int    // certificates above the client's, up to the root
	ListenAddr  string // an IP address, "" for every address
	ListenPort  int
	ServerName  string
	Upstream    *url.URL      // http://HOST:PORT, as ParseUpstream returns it
	CRLLifetime time.Duration // the CA's CRL lifetime
	// HostDir is the directory of the files on a server host with no CA
	// directory, "" when the server reads the CA directory (see OnHost).
	HostDir   string
	HostFiles []HostFile // what to copy into HostDir
	// The identity headers, as the proxy's --headers and --header take
	// them (see identity.HeaderFields): "" is the minica profile. nginx and
	// Apache only; HAProxy sets the minica profile's.
	HeaderProfile string
	CustomHeaders []string
}

// Listen is ADDR:PORT, or PORT alone when no address was given.
func (f *Front) Listen() string {
	if f.ListenAddr == "" {
		return fmt.Sprint(f.ListenPort)
	}
	return net.JoinHostPort(f.ListenAddr, fmt.Sprint(f.ListenPort))
}

// UpstreamHostPort is the upstream's HOST:PORT.
func (f *Front) UpstreamHostPort() string { return f.Upstream.Host }

// Intermediate reports whether the CA is an intermediate under another CA.
func (f *Front) Intermediate() bool { return f.Depth > 1 }

// Check reports the first fact of f a configuration cannot be written
// from: a relative path, a missing name, a port out of range, or an
// upstream that ParseUpstream would not return.
func (f *Front) Check() error {
	for _, p := range []struct{ what, path string }{
		{"CA directory", f.Dir}, {"host directory", f.HostDir}, {"certificate", f.CertFile}, {"chain", f.ChainFile}, {"key", f.KeyFile},
		{"CA file", f.CAFile}, {"CRL file", f.CRLFile},
	} {
		if !filepath.IsAbs(p.path) && (p.path != "" || p.what != "host directory") {
			return fmt.Errorf("the %s path %q is not absolute", p.what, p.path)
		}
	}
	switch {
	case f.Name == "" || f.Serial == "" || f.ServerName == "":
		return errors.New("the server certificate's name, serial and server name are required")
	case f.ListenPort < 1 || f.ListenPort > 65535:
		return fmt.Errorf("the listen port %d is not from 1 to 65535", f.ListenPort)
	case f.Upstream == nil || f.Upstream.Scheme != "http" || f.Upstream.Port() == "" || f.Upstream.Path != "":
		return fmt.Errorf("the upstream %v is not http://HOST:PORT", f.Upstream)
	}
	return nil
}

// ParseUpstream reads an upstream as endpoint.ParseUpstream does, then refuses
// what a front-end configuration cannot forward to: https, a unix socket, a
// user, a path, a query or a fragment. The URL has the port (80 by default)
// and no path.
func ParseUpstream(s string) (*url.URL, error) {
	up, err := endpoint.ParseUpstream(s)
	if err != nil {
		return nil, err
	}
	u := up.URL
	if up.Socket != "" || u.Scheme != "http" {
		return nil, fmt.Errorf("%q: only http upstreams are supported (keep the app on a loopback or private address)", s)
	}
	if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return nil, fmt.Errorf("%q: want http://HOST:PORT", s)
	}
	if u.Port() == "" {
		u.Host = net.JoinHostPort(u.Hostname(), "80")
	}
	u.Path = ""
	return u, nil
}

// ParseListen reads PORT or ADDR:PORT as endpoint.ParseListen does, then
// refuses what a server's configuration cannot say: a port outside 1 to
// 65535 (port 0, a free port, is the proxy's) and a host name (the servers
// want an IP address). addr is "" for every address.
func ParseListen(s string) (addr string, port int, err error) {
	addr, p, err := endpoint.ParseListen(s)
	if err == nil {
		port, err = strconv.Atoi(p)
	}
	switch {
	case errors.Is(err, endpoint.ErrListenPort) || err == nil && (port < 1 || port > 65535) || errors.Is(err, strconv.ErrRange):
		return "", 0, fmt.Errorf("%q: the port must be a number from 1 to 65535", s)
	case err != nil:
		return "", 0, err
	case addr != "" && net.ParseIP(addr) == nil:
		return "", 0, fmt.Errorf("%q: the address must be an IP address", s)
	}
	return addr, port, nil
}

// DefaultServerName is the host name clients use for a certificate with
// these SANs ("dns:NAME", "ip:ADDR", as ca.Record keeps them): the first DNS
// name, else the first IP address, else name.
func DefaultServerName(name string, sans []string) string {
	for _, prefix := range []string{"dns:", "ip:"} {
		for _, s := range sans {
			if h, ok := strings.CutPrefix(s, prefix); ok {
				return h
			}
		}
	}
	return name
}

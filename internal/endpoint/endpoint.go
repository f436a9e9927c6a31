package endpoint

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// Upstream is a parsed upstream: where a front end forwards requests.
type Upstream struct {
	// URL is the http or https URL requests are forwarded to; for a unix
	// socket it is http://unix/.
	URL *url.URL
	// Socket is the path of the unix socket, "" for TCP.
	Socket string
}

// ParseUpstream parses an upstream as `minica proxy --upstream`, a
// policy's "upstream" and `minica config --upstream` accept it:
// http://HOST[:PORT][/PATH], https://HOST[:PORT][/PATH], unix:/PATH, or
// HOST:PORT, short for http://HOST:PORT.
func ParseUpstream(s string) (Upstream, error) {
	if path, ok := strings.CutPrefix(s, "unix:"); ok {
		if path == "" {
			return Upstream{}, fmt.Errorf("%q: empty socket path", s)
		}
		return Upstream{URL: &url.URL{Scheme: "http", Host: "unix", Path: "/"}, Socket: path}, nil
	}
	raw := s
	if !strings.Contains(s, "://") {
		if _, port, err := net.SplitHostPort(s); err != nil || !isPort(port) {
			return Upstream{}, fmt.Errorf("%q: want http://HOST:PORT, https://HOST:PORT or unix:/PATH", s)
		}
		raw = "http://" + s
	}
	u, err := url.Parse(raw)
	if err != nil {
		return Upstream{}, fmt.Errorf("%q is not a URL", s)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Upstream{}, fmt.Errorf("%q: want http://HOST:PORT, https://HOST:PORT or unix:/PATH", s)
	}
	return Upstream{URL: u}, nil
}

// ErrListenPort is returned, wrapped, by ParseListen for a port that is not
// a decimal number.
var ErrListenPort = errors.New("the port must be a number")

// ParseListen parses where to accept clients, as `minica proxy --listen`,
// `minica serve --listen` and `minica config --listen` accept it: PORT or
// :PORT (every address), or HOST:PORT, with an IPv6 address in brackets.
// host is "" for every address. The port's range is the caller's to check:
// the proxy leaves it to the system (port 0 picks a free one), a
// configuration wants 1 to 65535.
func ParseListen(s string) (host, port string, err error) {
	port = s
	if strings.Contains(s, ":") {
		if host, port, err = net.SplitHostPort(s); err != nil {
			return "", "", fmt.Errorf("%q is not PORT or HOST:PORT", s)
		}
	}
	if port == "" || strings.Trim(port, "0123456789") != "" {
		return "", "", fmt.Errorf("%q: %w", s, ErrListenPort)
	}
	return host, port, nil
}

// isPort reports whether s is a decimal port number from 0 to 65535.
func isPort(s string) bool {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return false
	}
	n, err := strconv.Atoi(s)
	return err == nil && n <= 65535
}

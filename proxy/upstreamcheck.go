package proxy

import (
	"context"
	"net"
	"sync"
	"time"

	"minica/internal/endpoint"
)

// UpstreamFailure is an upstream of the proxy's routes that did not
// accept a connection.
type UpstreamFailure struct {
	Upstream string // as configured (--upstream, or a route's "upstream")
	Cause    string // a ReasonUpstream constant
	Err      error
}

// DialUpstreams opens, and closes at once, one TCP (or unix socket)
// connection to each distinct upstream of the routes in use, each bounded
// by timeout, all at once, and returns those that failed, in route order.
// It sends nothing (no TLS handshake): it tells an operator at start that
// an app is not there yet, which is no error (apps often start after the
// proxy).
func (p *Proxy) DialUpstreams(ctx context.Context, timeout time.Duration) []UpstreamFailure {
	var ups []string
	targets := map[string]endpoint.Upstream{}
	for _, r := range p.routing.Load().pol.Routes {
		if r.Upstream == "" || r.Rule.Refuse {
			continue
		}
		if _, seen := targets[r.Upstream]; !seen {
			ups = append(ups, r.Upstream)
			targets[r.Upstream] = r.Target
		}
	}
	errs := make([]error, len(ups))
	var wg sync.WaitGroup
	for i, up := range ups {
		wg.Go(func() { errs[i] = dialUpstream(ctx, targets[up], timeout) })
	}
	wg.Wait()
	var failed []UpstreamFailure
	for i, err := range errs {
		if err != nil {
			failed = append(failed, UpstreamFailure{Upstream: ups[i], Cause: UpstreamCause(err), Err: err})
		}
	}
	return failed
}

// dialUpstream connects to up within timeout and closes the connection.
func dialUpstream(ctx context.Context, up endpoint.Upstream, timeout time.Duration) error {
	d := net.Dialer{Timeout: timeout}
	network, addr := "unix", up.Socket
	if up.Socket == "" {
		port := up.URL.Port()
		if port == "" {
			port = "80"
			if up.URL.Scheme == "https" {
				port = "443"
			}
		}
		network, addr = "tcp", net.JoinHostPort(up.URL.Hostname(), port)
	}
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return err
	}
	return c.Close()
}

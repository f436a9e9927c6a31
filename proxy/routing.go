package proxy

import (
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"

	"minica/identity"
	"minica/internal/endpoint"
	"minica/proxy/policy"
)

// The reasons of the policy's refusals (Policy.Decide decides them), among
// the proxy's Reason constants.
const (
	ReasonNotAllowed  = policy.ReasonNotAllowed
	ReasonNoRoute     = policy.ReasonNoRoute
	ReasonMisdirected = policy.ReasonMisdirected
	ReasonBadPath     = policy.ReasonBadPath
	ReasonDaysLeft    = policy.ReasonDaysLeft
)

// routing is the policy in use, with the ReverseProxy of each route (nil
// for a route that refuses). A reload builds a new one and swaps it in;
// requests under way keep theirs.
type routing struct {
	pol *policy.Policy
	rps []*httputil.ReverseProxy
	// byKey are the ReverseProxies by Route.UpstreamKey, reused by the
	// next policy so that upstream connections survive a reload.
	byKey map[string]*httputil.ReverseProxy
}

// policyState is what the policy reloads remember between calls.
type policyState struct {
	// failed is the content sum (or error text) of the last bad policy,
	// so that a bad file is logged and counted once, not every reload.
	failed [32]byte
}

// configUpstream is the Upstream of cfg, nil with a PolicyFile, which
// excludes Upstream, UpstreamRootCAs and the Allow lists.
func configUpstream(cfg *Config) (endpoint.Upstream, error) {
	if cfg.PolicyFile == "" {
		up, err := endpoint.ParseUpstream(cfg.Upstream)
		if err != nil {
			return endpoint.Upstream{}, fmt.Errorf("upstream %w", err)
		}
		return up, nil
	}
	if cfg.Upstream != "" || cfg.UpstreamRootCAs != nil || len(cfg.AllowCN)+len(cfg.AllowEmail)+len(cfg.AllowOU)+len(cfg.AllowURI) > 0 {
		return endpoint.Upstream{}, errors.New("config: PolicyFile excludes Upstream, UpstreamRootCAs and the Allow lists")
	}
	return endpoint.Upstream{}, nil
}

// policyOptions are the options of the proxy's policy loads, against the
// CA bundle cas.
func policyOptions(cas []*x509.Certificate) policy.Options {
	return policy.Options{CAs: cas}
}

// initRouting loads the policy (Config.PolicyFile, or the one route of
// Config.Upstream) at New.
func (p *Proxy) initRouting(cas []*x509.Certificate) error {
	var pol *policy.Policy
	if p.cfg.PolicyFile == "" {
		allow := policy.Allow{CN: p.cfg.AllowCN, Email: p.cfg.AllowEmail, OU: p.cfg.AllowOU, URI: p.cfg.AllowURI}
		pol = policy.OneRoute(p.cfg.Upstream, endpoint.Upstream{URL: p.target, Socket: p.unixPath}, p.cfg.UpstreamRootCAs, allow)
	} else {
		var err error
		if pol, err = policy.LoadFile(p.cfg.PolicyFile, policyOptions(cas)); err != nil {
			return err
		}
	}
	rt := p.newRouting(pol, nil)
	if p.cfg.PolicyFile == "" {
		p.rp = rt.rps[0]
	}
	p.routing.Store(rt)
	return nil
}

// newRouting builds the ReverseProxies of pol, reusing those of prev
// (nil at start) for the same upstream and CA.
func (p *Proxy) newRouting(pol *policy.Policy, prev *routing) *routing {
	rt := &routing{pol: pol, rps: make([]*httputil.ReverseProxy, len(pol.Routes)), byKey: map[string]*httputil.ReverseProxy{}}
	for i, r := range pol.Routes {
		if r.Rule.Refuse {
			continue
		}
		rp := rt.byKey[r.UpstreamKey]
		if rp == nil && prev != nil {
			rp = prev.byKey[r.UpstreamKey]
		}
		if rp == nil {
			rp = p.newReverseProxy(r.Target, r.UpstreamRootCAs)
			rp.ErrorHandler = p.bodyErrors(rp.ErrorHandler)
		}
		rt.byKey[r.UpstreamKey] = rp
		rt.rps[i] = rp
	}
	return rt
}

// reloadPolicy re-reads Config.PolicyFile (and its upstream CA files) and
// swaps it in when it changed and compiles against cas; a bad one keeps
// the policy in use and is reported through fail, once per bad content.
func (p *Proxy) reloadPolicy(cas []*x509.Certificate, fail func(file string, err error)) {
	if p.cfg.PolicyFile == "" {
		return
	}
	old := p.routing.Load()
	data, err := os.ReadFile(p.cfg.PolicyFile)
	if err == nil && old.pol.Unchanged(data, os.ReadFile) {
		p.policy.failed = [32]byte{}
		return
	}
	var pol *policy.Policy
	if err != nil {
		err = fmt.Errorf("reading policy %q: %w", p.cfg.PolicyFile, err)
	} else {
		pol, err = policy.Parse(p.cfg.PolicyFile, data, policyOptions(cas))
	}
	if err != nil {
		sum := sha256.Sum256([]byte(err.Error()))
		if sum != p.policy.failed {
			p.policy.failed = sum
			fail("policy", oneLineError(err))
		}
		return
	}
	p.policy.failed = [32]byte{}
	if pol.Equal(old.pol) {
		return
	}
	next := p.newRouting(pol, old)
	p.routing.Store(next)
	for key, rp := range old.byKey {
		if next.byKey[key] != rp {
			if tr, ok := rp.Transport.(interface{ CloseIdleConnections() }); ok {
				tr.CloseIdleConnections()
			}
		}
	}
	p.log.line("policy-reload", "file", p.cfg.PolicyFile, "routes", fmt.Sprint(len(pol.Routes)))
}

// oneLineError keeps the first of several policy errors, for the log line.
func oneLineError(err error) error {
	var pe policy.Errors
	if errors.As(err, &pe) && len(pe) > 1 {
		return fmt.Errorf("%w (and %d more errors; see minica proxy policy check)", pe[0], len(pe)-1)
	}
	return err
}

// route decides r of the verified client id by the policy in use: the
// ReverseProxy of its route, or nil and the refusal.
func (p *Proxy) route(r *http.Request, id *identity.Identity) (*httputil.ReverseProxy, policy.Decision) {
	rt := p.routing.Load()
	in := policy.Request{Host: r.Host, Path: r.URL.EscapedPath()}
	if r.TLS != nil {
		in.SNI = r.TLS.ServerName
	}
	d := rt.pol.Decide(in, id, p.cfg.Now())
	if d.Reason != "" {
		return nil, d
	}
	return rt.rps[d.Route.Index-1], d
}

// routeRefuses returns the reason the policy in use refuses the admitted
// exchange x now, or "": an open tunnel or stream whose route no longer
// lets its client through (a reload, a min_days_left passed) is closed.
func (p *Proxy) routeRefuses(x *exchange) string {
	if x.id == nil {
		return ""
	}
	_, d := p.route(x.r, x.id)
	return d.Reason
}

// withPath returns r with the clean path of its route decision, so that
// the upstream gets the path that was matched; r itself if it is the same.
func withPath(r *http.Request, clean string) *http.Request {
	if clean == r.URL.EscapedPath() {
		return r
	}
	u := *r.URL
	u.RawPath = clean
	u.Path, _ = url.PathUnescape(clean) // clean has only valid escapes, none of '/'
	r.URL = &u
	return r
}

// refuseRoute answers a request the policy refuses: by refuseWithText for
// the refusals of a rule, with the status of d for the others.
func refuseRoute(w http.ResponseWriter, d policy.Decision) {
	switch d.Reason {
	case ReasonNotAllowed, ReasonDaysLeft:
		refuseWithText(w, d.Reason)
	case ReasonMisdirected:
		http.Error(w, "misdirected request: the host is not the one this connection was opened for", d.Status)
	case ReasonBadPath:
		http.Error(w, "bad request path: encoded '/' or '\\', '\\', control characters, bad escapes and path parameters on '.', '..' or empty segments are refused", d.Status)
	default:
		http.Error(w, "no route for this host and path", d.Status)
	}
}

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
)

// routing is the policy in use, with the ReverseProxy of each route (nil
// for a route that refuses). A reload builds a new one and swaps it in;
// requests under way keep theirs.
type routing struct {
	pol *Policy
	rps []*httputil.ReverseProxy
	// byKey are the ReverseProxies by Route.upstreamKey, reused by the
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

// legacyPolicy is the policy of Config.Upstream and the Allow lists: one
// route for every host and path, whose rule is the Allow lists (everyone
// when they are empty).
func legacyPolicy(cfg *Config, up endpoint.Upstream) *Policy {
	rule := &Rule{Any: true}
	if len(cfg.AllowCN)+len(cfg.AllowEmail)+len(cfg.AllowOU)+len(cfg.AllowURI) > 0 {
		setOf := func(vals []string, norm func(string) string) set {
			s := set{}
			for _, v := range vals {
				s[norm(v)] = struct{}{}
			}
			return s
		}
		same := func(s string) string { return s }
		rule = &Rule{cn: setOf(cfg.AllowCN, same), email: setOf(cfg.AllowEmail, normEmail),
			ou: setOf(cfg.AllowOU, same), uri: setOf(cfg.AllowURI, same)}
	}
	rt := &Route{Index: 1, Name: "upstream", Host: "*", Path: "/", Upstream: cfg.Upstream, Rule: rule,
		up: up, upstreamPool: cfg.UpstreamRootCAs, upstreamKey: "legacy"}
	pol := &Policy{Routes: []*Route{rt}}
	pol.index()
	return pol
}

// policyOptions are the options of the proxy's policy loads, against the
// CA bundle cas.
func policyOptions(cas []*x509.Certificate) PolicyOptions {
	return PolicyOptions{CAs: cas}
}

// initRouting loads the policy (Config.PolicyFile, or the one route of
// Config.Upstream) at New.
func (p *Proxy) initRouting(cas []*x509.Certificate) error {
	var pol *Policy
	if p.cfg.PolicyFile == "" {
		pol = legacyPolicy(&p.cfg, endpoint.Upstream{URL: p.target, Socket: p.unixPath})
	} else {
		var err error
		if pol, err = LoadPolicyFile(p.cfg.PolicyFile, policyOptions(cas)); err != nil {
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
func (p *Proxy) newRouting(pol *Policy, prev *routing) *routing {
	rt := &routing{pol: pol, rps: make([]*httputil.ReverseProxy, len(pol.Routes)), byKey: map[string]*httputil.ReverseProxy{}}
	for i, r := range pol.Routes {
		if r.Rule.Refuse {
			continue
		}
		rp := rt.byKey[r.upstreamKey]
		if rp == nil && prev != nil {
			rp = prev.byKey[r.upstreamKey]
		}
		if rp == nil {
			rp = p.newReverseProxy(r.up, r.upstreamPool)
			rp.ErrorHandler = p.bodyErrors(rp.ErrorHandler)
		}
		rt.byKey[r.upstreamKey] = rp
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
	if err == nil && old.pol.unchanged(data, os.ReadFile) {
		p.policy.failed = [32]byte{}
		return
	}
	var pol *Policy
	if err != nil {
		err = fmt.Errorf("reading policy %q: %w", p.cfg.PolicyFile, err)
	} else {
		pol, err = ParsePolicy(p.cfg.PolicyFile, data, policyOptions(cas))
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
	if pol.sum == old.pol.sum {
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
	var pe PolicyErrors
	if errors.As(err, &pe) && len(pe) > 1 {
		return fmt.Errorf("%w (and %d more errors; see minica proxy policy check)", pe[0], len(pe)-1)
	}
	return err
}

// route decides r of the verified client id by the policy in use: the
// ReverseProxy of its route, or nil and the refusal.
func (p *Proxy) route(r *http.Request, id *identity.Identity) (*httputil.ReverseProxy, Decision) {
	rt := p.routing.Load()
	in := RouteRequest{Host: r.Host, Path: r.URL.EscapedPath()}
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

// refuseRoute answers a request the policy refuses: by refuse for the
// refusals of a rule, with the status of d for the others.
func refuseRoute(w http.ResponseWriter, d Decision) {
	switch d.Reason {
	case ReasonNotAllowed, ReasonDaysLeft:
		refuse(w, d.Reason)
	case ReasonMisdirected:
		http.Error(w, "misdirected request: the host is not the one this connection was opened for", d.Status)
	case ReasonBadPath:
		http.Error(w, "bad request path: encoded '/' or '\\', '\\', control characters, bad escapes and path parameters on '.', '..' or empty segments are refused", d.Status)
	default:
		http.Error(w, "no route for this host and path", d.Status)
	}
}

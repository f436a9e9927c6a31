package main

import (
	"context"
	"crypto/x509"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/urfave/cli/v2"

	"minica/ca"
	"minica/crlsource"
	"minica/proxy"
)

// parseCRLURLFlags checks --crl when it is a URL and the flags that go
// with one.
func parseCRLURLFlags(c *cli.Context, o *proxyOptions) error {
	crls := c.StringSlice("crl")
	crl := ""
	if len(crls) > 0 {
		crl = crls[0]
	}
	isURL := slices.ContainsFunc(crls, func(s string) bool { return strings.Contains(s, "://") })
	if isURL && len(crls) > 1 {
		return usagef(c, "--crl: a URL goes alone; for the CRLs of several CAs, serve one PEM file with all of them")
	}
	if isURL {
		if err := crlsource.CheckURL(crl); err != nil {
			return usagef(c, "--crl: %v", err)
		}
		o.crlURL = crl
	}
	for _, f := range []string{"crl-ca", "crl-cache"} {
		if c.String(f) != "" && !isURL {
			return usagef(c, "--%s goes with a --crl URL", f)
		}
	}
	for _, d := range []struct {
		flag string
		dst  *time.Duration
	}{{"crl-refresh", &o.crlRefresh}, {"crl-timeout", &o.crlLimit}} {
		v, err := ca.ParseDuration(c.String(d.flag))
		if err != nil {
			return usagef(c, "--%s: %v", d.flag, err)
		}
		*d.dst = v
	}
	return nil
}

// crlFollow follows the --crl URL for the proxy: its CRL is what LoadCRL
// returns, each new one is reloaded at once, and the fetches are logged and
// counted by the proxy once there is one (warnings on stderr before).
type crlFollow struct {
	*crlsource.Follower
	e         *env
	p         atomic.Pointer[proxy.Proxy]
	lastFetch atomic.Int64 // unix nanoseconds of a good fetch before attach
}

// startCRLFollow fetches the first CRL of the --crl URL, or takes the
// --crl-cache file when the URL fails.
func startCRLFollow(c *cli.Context, e *env, o *proxyOptions) (*crlFollow, error) {
	h := &crlsource.HTTP{URL: o.crlURL, HeaderTimeout: o.crlLimit, BodyTimeout: o.crlLimit}
	if file := c.String("crl-ca"); file != "" {
		certs, err := readCertsFile(file)
		if err != nil {
			return nil, err
		}
		h.RootCAs = x509.NewCertPool()
		for _, cert := range certs {
			h.RootCAs.AddCert(cert)
		}
	}
	f := &crlFollow{e: e}
	f.Follower = &crlsource.Follower{
		HTTP: h, Refresh: o.crlRefresh, Cache: c.String("crl-cache"), Now: e.now,
		Accept: f.accept, Failed: f.failed, Fetched: f.fetched,
	}
	if err := f.Start(c.Context); err != nil {
		hint := "check that the --crl URL answers with the CA's CRL"
		if f.Cache == "" {
			hint += ", and give --crl-cache FILE so that a restart can do without it"
		}
		return nil, withHint(err, "%s", hint)
	}
	if f.FromCache() {
		warnf(e.stderr, "starting from the cached CRL %q; following %s once it answers", f.Cache, o.crlURL)
	}
	return f, nil
}

// attach hands the fetches' log and metrics to p.
func (f *crlFollow) attach(p *proxy.Proxy) {
	f.p.Store(p)
	if at := f.lastFetch.Load(); at != 0 {
		p.CRLFetched(time.Unix(0, at))
	}
}

// accept reloads the proxy at once with the new CRL, which goes through
// the checks of every CRL; a refused one is a FetchError with the reason.
func (f *crlFollow) accept(data []byte) error {
	p := f.p.Load()
	if p == nil {
		return errors.New("the proxy is not running yet")
	}
	if err := proxy.ReloadFailure(p.Reload(), "crl"); err != nil {
		return &crlsource.FetchError{Reason: proxy.CRLRefusalReason(err), URL: f.HTTP.URL, Err: err}
	}
	return nil
}

func (f *crlFollow) failed(reason string, err error) {
	if p := f.p.Load(); p != nil {
		p.CRLFetchFailed(reason, err)
		return
	}
	warnf(f.e.stderr, "%v (%s)", err, reason)
}

func (f *crlFollow) fetched(at time.Time) {
	if p := f.p.Load(); p != nil {
		p.CRLFetched(at)
		return
	}
	f.lastFetch.Store(at.UnixNano())
}

// run follows the URL until ctx is done.
func (f *crlFollow) run(ctx context.Context) {
	f.Run(ctx)
}

package main

import (
	"crypto/x509"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"minica/ca"
	"minica/crlsource"
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

// startCRLFollow fetches the first CRL of the --crl URL, or takes the
// --crl-cache file when the URL fails, warning of each failure; the proxy
// then follows the URL.
func startCRLFollow(c *cli.Context, e *env, o *proxyOptions) (*crlsource.Follower, error) {
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
	f := &crlsource.Follower{HTTP: h, Refresh: o.crlRefresh, Cache: c.String("crl-cache"), Now: e.now}
	warn := func(reason string, err error) { warnf(e.stderr, "%v (%s)", err, reason) }
	if err := f.Start(c.Context, warn); err != nil {
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

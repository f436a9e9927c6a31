package main

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/urfave/cli/v2"

	"minica/ca"
	"minica/crlsource"
	"minica/revoke"
)

// defaultFetchTimeout bounds each step of `minica crl fetch`.
const defaultFetchTimeout = time.Minute

func crlFetchCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "fetch",
		Usage:     "download the CRL from URL into --out when it changed, checked as the proxy checks one",
		ArgsUsage: "URL",
		Description: "One conditional GET (If-None-Match computed from the CRL in --out, and the\n" +
			"Last-Modified of that file). A new CRL must verify against a CA of --ca, be\n" +
			"complete, have a number not lower than the one in --out, a thisUpdate not in\n" +
			"the future and a nextUpdate not past; then it replaces --out atomically (PEM\n" +
			"when FILE ends in .pem, else DER) and --exec runs (sh -c). Unchanged: exit 0,\n" +
			"no --exec. A refused CRL leaves --out untouched and exits 1 with the reason.\n" +
			"For a systemd timer or cron job in front of nginx, Apache or HAProxy.\n\n" +
			"Example:\n   minica crl fetch http://pki.example.com/crl.der --out /etc/nginx/crl.der --ca /etc/nginx/ca.crt \\\n" +
			"     --exec 'systemctl reload nginx'",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Usage: "keep the CRL in `FILE` (required)"},
			&cli.StringFlag{Name: "ca", Usage: "the CA certificates (PEM or DER) in `FILE` that must have signed the CRL (required)"},
			caFingerprintFlag(),
			&cli.StringFlag{Name: "crl-ca", Usage: "verify an https URL against the CA certificates in `FILE` (default: the system roots)"},
			&cli.StringFlag{Name: "exec", Usage: "run `CMD` (sh -c) after a new CRL was written"},
			&cli.StringFlag{Name: "timeout", Value: ca.FormatDuration(defaultFetchTimeout), Usage: "give up when connecting, the headers or the body take longer than `DURATION`"},
		},
		Action: func(c *cli.Context) error { return runCRLFetch(c, e) },
	}
}

func runCRLFetch(c *cli.Context, e *env) error {
	if err := wantArgs(c, 1, 1); err != nil {
		return err
	}
	url, out, caFile := c.Args().First(), c.String("out"), c.String("ca")
	if err := crlsource.CheckURL(url); err != nil {
		return usagef(c, "%v", err)
	}
	if out == "" || caFile == "" {
		return usagef(c, "--out FILE and --ca FILE are required")
	}
	timeout, err := ca.ParseDuration(c.String("timeout"))
	if err != nil {
		return usagef(c, "--timeout: %v", err)
	}
	pin, err := parseCAPin(c)
	if err != nil {
		return err
	}
	cas, err := readPinnedCerts(caFile, pin)
	if err != nil {
		return err
	}
	h := &crlsource.HTTP{URL: url, DialTimeout: timeout, HeaderTimeout: timeout, BodyTimeout: timeout}
	if file := c.String("crl-ca"); file != "" {
		roots, err := readCertsFile(file)
		if err != nil {
			return err
		}
		h.RootCAs = x509.NewCertPool()
		for _, r := range roots {
			h.RootCAs.AddCert(r)
		}
	}
	now := e.now()
	var held crlsource.Held
	var prev revoke.IssuedCRL
	if data, err := os.ReadFile(out); err == nil {
		held.Data = data
		if fi, err := os.Stat(out); err == nil {
			held.LastModified = fi.ModTime()
		}
		if crl, err := oneCRL(data, cas); err == nil {
			prev = crl
		}
		// A file that is not a CRL of the CA is replaced by one that is.
		if prev.CRL == nil {
			warnf(e.stderr, "%q holds no CRL of the CA; replacing it", out)
			held = crlsource.Held{}
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("reading CRL %q: %w", out, err)
	}
	ctx := c.Context
	if ctx == nil {
		ctx = context.Background()
	}
	resp, err := h.Fetch(ctx, held, 0)
	if err != nil {
		return withHint(err, "%q is left as it was; check that the URL serves the CA's CRL (is 'minica serve' running on the CA host?)", out)
	}
	if resp.NotModified && prev.CRL == nil {
		return fmt.Errorf("fetching CRL %q: the server answered 304 Not Modified to a request without conditions", url)
	}
	if resp.NotModified || prev.CRL != nil && crlsource.Tag(resp.Data) == crlsource.Tag(held.Data) {
		fmt.Fprintf(e.stdout, "unchanged %s: CRL %s\n", out, prev.CRL.Number())
		return nil
	}
	next, err := oneCRL(resp.Data, cas)
	replace := false
	if err == nil {
		replace, err = revoke.MayReplace(next, prev, now)
	}
	if err != nil {
		err = fmt.Errorf("refusing the CRL from %q (%s), %q left as it was: %w", url, revoke.RefusalReason(err), out, err)
		if hint := crlIssuerHint(err, "at "+url, "the CA of --ca", "check the URL or --ca"); hint != "" {
			return withHint(err, "%s", hint)
		}
		if errors.Is(err, revoke.ErrExpired) && next.CRL != nil {
			return withHint(err, "the CRL at %s expired at %s: %s", url, next.CRL.NextUpdate().UTC().Format(time.RFC3339), crlExpiredAdvice(true))
		}
		return err
	}
	// Nothing held, or an expired CRL held: the web server refuses every
	// client past nextUpdate, so an expired CRL is no better to install.
	if replace && revoke.Freshness(next.CRL.ThisUpdate(), next.CRL.NextUpdate(), revoke.Thresholds{}, now) == revoke.Expired {
		return withHint(fmt.Errorf("refusing the CRL from %q (%s), %q left as it was: CRL is past its nextUpdate (nextUpdate %s)",
			url, revoke.RefusalExpired, out, next.CRL.NextUpdate().UTC().Format(time.RFC3339)),
			"the CRL at %s expired at %s: %s", url, next.CRL.NextUpdate().UTC().Format(time.RFC3339), crlExpiredAdvice(true))
	}
	if !replace {
		// Another copy of the CRL held (the same number): nothing new.
		fmt.Fprintf(e.stdout, "unchanged %s: CRL %s\n", out, prev.CRL.Number())
		return nil
	}
	crl := next.CRL
	if _, err := writeCopy(out, crlsource.DER(resp.Data)); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "updated %s: CRL %s, next update %s\n", out, crl.Number(), day(crl.NextUpdate()))
	if cmd := c.String("exec"); cmd != "" {
		x := exec.CommandContext(ctx, "sh", "-c", cmd)
		x.Stdout, x.Stderr = e.stdout, e.stderr
		if err := x.Run(); err != nil {
			return fmt.Errorf("running --exec %q after writing %q: %w", cmd, out, err)
		}
	}
	return nil
}

// oneCRL reads data, a CRL file, by revoke.ParseCRLFile, the reader of the
// proxy: it must hold one CRL, of a CA of cas.
func oneCRL(data []byte, cas []*x509.Certificate) (revoke.IssuedCRL, error) {
	crls, err := revoke.ParseCRLFile(data, cas)
	if err != nil {
		return revoke.IssuedCRL{}, err
	}
	if len(crls) != 1 {
		return revoke.IssuedCRL{}, fmt.Errorf("%w: %d CRLs in one file, not one", revoke.ErrMalformed, len(crls))
	}
	return crls[0], nil
}

package main

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"

	"github.com/urfave/cli/v2"

	"minica/identity"
	"minica/proxy"
	"minica/proxy/policy"
)

// policyFlag is the proxy's --policy.
func policyFlag() cli.Flag {
	return &cli.StringFlag{Name: "policy", Usage: "route by the policy in `FILE` (JSON: routes by host and path, each with its upstream and rule; re-read on change and SIGHUP) instead of --upstream and --allow-*"}
}

// parsePolicyFlag sets cfg.PolicyFile from --policy, which excludes the
// flags of the one-route policy it replaces.
func parsePolicyFlag(c *cli.Context, cfg *proxy.Config) error {
	file := c.String("policy")
	if file == "" {
		return nil
	}
	for _, f := range []string{"upstream", "upstream-ca", "allow-cn", "allow-email", "allow-ou", "allow-uri"} {
		if c.IsSet(f) {
			return usagef(c, "--policy excludes --%s: give each route its upstream and rule in the policy file", f)
		}
	}
	cfg.PolicyFile = file
	return nil
}

// policyStartHint adds what to do to a bad policy at start.
func policyStartHint(err error) error {
	var pe policy.Errors
	if errors.As(err, &pe) && len(pe) > 0 {
		return withHint(err, "list every error with 'minica proxy policy check %s'", pe[0].File)
	}
	return err
}

func proxyPolicyCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "policy",
		Usage: "check a policy file of the proxy",
		Subcommands: []*cli.Command{{
			Name:      "check",
			Usage:     "validate a policy file; with --explain, say how it decides one request",
			ArgsUsage: "FILE [URL]",
			Description: "Prints each error as FILE:LINE:COL: message and exits 1 when there is one,\n" +
				"else prints a summary and exits 0. --ca checks that each issuer and\n" +
				"issuer_sha256 of the rules names a CA of the bundle (the proxy does at load).\n" +
				"--explain CERT URL prints the route a request for URL (its host taken for the\n" +
				"TLS server name as well) by the client of CERT takes, the path the upstream\n" +
				"gets, and which clause of the rule lets the client through or why it is\n" +
				"refused; exit 0 if allowed, 1 if refused. CERT is not verified here: the\n" +
				"proxy verifies a client (chain, validity, CRL) before its policy decides.\n\n" +
				"Example:\n   minica proxy policy check front.json\n" +
				"   minica proxy policy check front.json --ca ca.crt --explain simon.crt https://wiki.example.com/admin",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "ca", Usage: "the CA certificates of the clients, in `FILE`"},
				&cli.StringFlag{Name: "explain", Usage: "explain the decision for the client certificate in `CERT` and the URL argument"},
			},
			Action: func(c *cli.Context) error { return runPolicyCheck(c, e) },
		}},
	}
}

func runPolicyCheck(c *cli.Context, e *env) error {
	explain := c.String("explain")
	if explain == "" {
		if err := wantArgs(c, 1, 1); err != nil {
			return err
		}
	} else if c.NArg() != 2 {
		return usagef(c, "--explain CERT needs the URL to explain: policy check FILE --explain CERT URL")
	}
	file := c.Args().Get(0)
	var target *url.URL
	if explain != "" {
		u, err := url.Parse(c.Args().Get(1))
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return usagef(c, "%q: want an absolute URL such as https://wiki.example.com/admin", c.Args().Get(1))
		}
		target = u
	}
	var cas []*x509.Certificate
	if f := c.String("ca"); f != "" {
		var err error
		if cas, err = readCertsFile(f); err != nil {
			return err
		}
	}
	pol, err := policy.LoadFile(file, policy.Options{CAs: cas})
	var pe policy.Errors
	if errors.As(err, &pe) {
		for _, one := range pe {
			fmt.Fprintln(e.stderr, one)
		}
		return &exitError{code: 1, err: fmt.Errorf("policy %q has %d error(s)", file, len(pe))}
	}
	if err != nil {
		return err
	}
	if explain == "" {
		fmt.Fprintf(e.stdout, "%s: ok, %d route(s)\n", file, len(pol.Routes))
		return nil
	}
	return explainPolicy(e, pol, cas, explain, target)
}

// explainPolicy prints how pol decides a request for target by the client
// of certFile.
func explainPolicy(e *env, pol *policy.Policy, cas []*x509.Certificate, certFile string, target *url.URL) error {
	certs, err := readCertsFile(certFile)
	if err != nil {
		return err
	}
	leaf, chain := certs[0], []*x509.Certificate{certs[0]}
	for _, ca := range append(cas, certs[1:]...) {
		if leaf.CheckSignatureFrom(ca) == nil {
			chain = append(chain, ca)
			break
		}
	}
	id, err := identity.New(leaf, chain)
	if err != nil {
		return fmt.Errorf("reading certificate %q: %w", certFile, err)
	}
	in := policy.Request{Host: target.Host, SNI: target.Hostname(), Path: target.EscapedPath()}
	if net.ParseIP(in.SNI) != nil {
		in.SNI = "" // clients send no SNI for an address
	}
	d := pol.Explain(in, id, e.now())
	fmt.Fprintf(e.stdout, "request: host %s, path %s\n", d.Host, pathOrNone(d.Path))
	if rt := d.Route; rt != nil {
		up := rt.Upstream
		if up == "" {
			up = "(none: refuses)"
		}
		fmt.Fprintf(e.stdout, "route: %d %s (host %s, path %s) -> %s\n", rt.Index, strconv.Quote(rt.Name), rt.Host, rt.Path, up)
		switch {
		case rt.Rule.Refuse:
			fmt.Fprintln(e.stdout, "rule: refuse")
		case rt.Rule.Name != "":
			fmt.Fprintf(e.stdout, "rule: %s\n", strconv.Quote(rt.Rule.Name))
		default:
			fmt.Fprintln(e.stdout, "rule: the route's allow")
		}
	}
	if d.Reason == "" {
		fmt.Fprintf(e.stdout, "decision: %s\n", d.Why)
		return nil
	}
	fmt.Fprintf(e.stdout, "decision: refused, %d %s: %s\n", d.Status, d.Reason, d.Why)
	return &exitError{code: 1, err: fmt.Errorf("%s is refused on %s (%s)", certFile, target, d.Reason)}
}

func pathOrNone(p string) string {
	if p == "" {
		return "(refused before routing)"
	}
	return p
}

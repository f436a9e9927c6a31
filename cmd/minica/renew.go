package main

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"minica/ca"
	"minica/revoke"
)

// identityFlags are issue's flags that change a certificate's identity:
// renew accepts them only to refuse them with the command that does it.
var identityFlags = []string{"cn", "dns", "ip", "email", "uri", "org", "ou", "profile", "name"}

func renewCommand(e *env) *cli.Command {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "csr", Usage: "certify the key of this CSR `FILE` (it must ask for the same identity, or none)"},
		&cli.BoolFlag{Name: "reuse-key", Usage: "certify the old key again instead of a new one (for a certificate from sign: its public key)"},
		validityFlag("", "the successor's lifetime (default: the old certificate's)"),
		keyTypeFlag("", "the new key's type (default: the old key's)"),
		&cli.BoolFlag{Name: "revoke-old", Usage: "revoke the old certificate (reason superseded) and republish the CRL"},
		&cli.BoolFlag{Name: "force", Usage: "renew a certificate that was already renewed (a second successor)"},
		&cli.StringFlag{Name: "expiring", Usage: "renew every valid, not yet renewed certificate that expires within `DURATION`, e.g. 30d"},
		&cli.BoolFlag{Name: "dry-run", Usage: "with --expiring: list what would be renewed, and change nothing"},
		passwordFileFlag(),
		jsonFlag(),
	}
	flags = append(flags, issueP12Flags()...)
	flags = append(flags, &cli.StringFlag{Name: "p12-dir", Usage: "with --expiring and --p12: write each bundle to `DIR`/NAME.p12 (default: the current directory)"})
	for _, name := range identityFlags {
		flags = append(flags, &cli.StringSliceFlag{Name: name, Hidden: true})
	}
	return &cli.Command{
		Name:      "renew",
		Usage:     "issue the successor of a certificate: same name, profile, subject and SANs, a new key",
		ArgsUsage: "NAME|SERIAL|FILE | --expiring DURATION",
		Description: "A name renews its newest valid certificate that has no successor yet. The\n" +
			"successor's record names the old one (renewal_of) and the old one's names the\n" +
			"successor (renewed_by); see 'minica show'. The old certificate stays valid\n" +
			"until it expires, unless --revoke-old. An expired certificate is renewed with\n" +
			"a note; a revoked one, or one already renewed (without --force), is refused.\n" +
			"A certificate from sign needs --csr with the new request, or --reuse-key.\n" +
			"To change the identity (names, email, profile), issue a new certificate.\n\n" +
			"Example:\n   minica renew simon\n   minica renew web1 --revoke-old\n   minica renew ext --csr ext-new.csr\n" +
			"   minica renew --expiring 30d --dry-run",
		Flags:  flags,
		Action: func(c *cli.Context) error { return runRenew(c, e) },
	}
}

type renewedJSON struct {
	issuedJSON
	RenewalOf  string         `json:"renewal_of"`
	OldRevoked bool           `json:"old_revoked"`
	OldExpired bool           `json:"old_expired,omitempty"`
	CRL        map[string]any `json:"crl,omitempty"`
}

func runRenew(c *cli.Context, e *env) error {
	for _, f := range identityFlags {
		if c.IsSet(f) {
			return withHint(usagef(c, "--%s would change the certificate's identity: %v", f, ca.ErrNotRenewal),
				"to issue a certificate for another identity use 'minica issue server|client NAME --force' (or 'minica sign'), then revoke the old one")
		}
	}
	if c.IsSet("expiring") {
		return runRenewExpiring(c, e)
	}
	for _, f := range []string{"dry-run", "p12-dir"} {
		if c.IsSet(f) {
			return usagef(c, "--%s needs --expiring", f)
		}
	}
	if err := wantArgs(c, 1, 1); err != nil {
		return err
	}
	opts := ca.RenewOptions{ReuseKey: c.Bool("reuse-key"), Force: c.Bool("force"), AllowExpired: true}
	var err error
	if opts.Validity, err = validityValue(c); err != nil {
		return err
	}
	if opts.KeyType, err = keyTypeValue(c); err != nil {
		return err
	}
	if file := c.String("csr"); file != "" {
		if c.Bool("p12") {
			return usagef(c, "--p12 and --csr: minica does not hold the key of a CSR")
		}
		if opts.KeyType != "" {
			return usagef(c, "--key-type and --csr: the CSR decides the key")
		}
		if opts.CSR, err = readCSR(file); err != nil {
			return err
		}
	}
	if opts.ReuseKey && opts.KeyType != "" {
		return usagef(c, "--key-type and --reuse-key: the old key decides the type")
	}
	authority, unlock, err := lockCA(c, e)
	if err != nil {
		return err
	}
	defer unlock()
	arg := c.Args().First()
	t, err := authority.Resolve(arg)
	if err != nil {
		return unknownNameHint(authority, err)
	}
	old, err := t.Renewable(e.now())
	if err != nil {
		return err
	}
	// Everything that can refuse runs before the CA key is loaded.
	req, err := authority.RenewalRequest(old, opts)
	if err != nil {
		return renewHint(err, old)
	}
	if req.PublicKey != nil && c.Bool("p12") {
		return usagef(c, "--p12: minica does not hold the key of %q (serial %s), which came from a CSR", old.Name, old.Serial)
	}
	p12, err := e.prepareIssueP12(c, old.Name)
	if err != nil {
		return err
	}
	signer, err := loadSigner(c, e, authority)
	if err != nil {
		return err
	}
	rn, err := authority.Renew(signer, old, opts)
	if err != nil {
		return renewHint(err, old)
	}
	out := renewedJSON{RenewalOf: rn.Predecessor.Serial, OldExpired: rn.Expired}
	var info *published
	if c.Bool("revoke-old") {
		if info, err = revokeSuperseded(c, e, authority, rn); err != nil {
			return err
		}
		out.OldRevoked = true
		out.CRL = crlJSON(info.CRLInfo)
	}
	if err := printRenewed(c, e, rn, out, info); err != nil {
		return err
	}
	if rn.Expired {
		fmt.Fprintf(e.stderr, "minica: note: %q (serial %s) had expired on %s; its successor is valid from now\n", old.Name, old.Serial, day(old.NotAfter))
	}
	return e.writeIssuedP12(c, p12, rn.Record)
}

// revokeSuperseded revokes the renewed certificate with reason superseded
// and republishes the CRL, as 'minica revoke' does. The successor exists
// whatever happens here, so a failure names it and the command that
// finishes the job.
func revokeSuperseded(c *cli.Context, e *env, authority *ca.CA, rn *ca.Renewed) (*published, error) {
	old := rn.Predecessor
	again := fmt.Sprintf("minica revoke %s --reason superseded", old.Serial)
	res, err := authority.RevokeRecord(old, revoke.Superseded)
	if err != nil {
		return nil, withHint(fmt.Errorf("renewed %q as serial %s, but revoking the old serial %s failed: %w", old.Name, rn.Record.Serial, old.Serial, err), "run '%s'", again)
	}
	info, err := publishRevocationsLocked(c, e, authority, res.ChangedRecords())
	if err != nil {
		return nil, withHint(fmt.Errorf("renewed %q as serial %s and revoked serial %s, but publishing the CRL failed: %w", old.Name, rn.Record.Serial, old.Serial, err), "run 'minica crl'")
	}
	return info, nil
}

// renewHint adds what to do about a refused renewal of old.
func renewHint(err error, old *ca.Record) error {
	var ar *ca.AlreadyRenewedError
	switch {
	case errors.As(err, &ar):
		return withHint(err, "renew its successor ('minica renew %s'), or pass --force for a second successor", ar.Successor)
	case errors.Is(err, ca.ErrRenewRevoked):
		return withHint(err, "issue a new certificate after checking why it was revoked: 'minica issue %s %s --force'", old.Profile, old.Name)
	case errors.Is(err, ca.ErrNotRenewal):
		return withHint(err, "a renewal keeps the identity; for another one use 'minica sign CSR --profile %s --name %s --force' or 'minica issue'", old.Profile, old.Name)
	case errors.Is(err, ca.ErrSameKey):
		return withHint(err, "make a CSR with a new key, or pass --reuse-key to certify the old key again")
	case errors.Is(err, ca.ErrNoRenewalKey):
		return withHint(err, "pass --csr FILE with a new request from its holder, or --reuse-key to certify the same key again")
	case errors.Is(err, ca.ErrOutlivesCA):
		return withHint(err, "pass a shorter --validity, or renew the CA first")
	}
	return err
}

func printRenewed(c *cli.Context, e *env, rn *ca.Renewed, out renewedJSON, info *published) error {
	r, old := rn.Record, rn.Predecessor
	if c.Bool("json") {
		out.issuedJSON = issuedOf(rn.Issued)
		return writeJSON(e.stdout, out)
	}
	fmt.Fprintf(e.stdout, "renewed %s certificate %q\n", r.Profile, r.Name)
	fmt.Fprintf(e.stdout, "  sans       %s\n", sanText(r.SANs))
	fmt.Fprintf(e.stdout, "  serial     %s\n", r.Serial)
	fmt.Fprintf(e.stdout, "  not after  %s\n", day(r.NotAfter))
	fmt.Fprintf(e.stdout, "  cert       %s\n", rn.CertFile)
	if rn.KeyFile != "" {
		fmt.Fprintf(e.stdout, "  key        %s\n", rn.KeyFile)
	}
	fmt.Fprintf(e.stdout, "  chain      %s\n", rn.ChainFile)
	if info != nil {
		fmt.Fprintf(e.stdout, "  renews     %s, revoked (superseded)\n", old.Serial)
		printPublished(e, info.CRLInfo)
		return nil
	}
	fmt.Fprintf(e.stdout, "  renews     %s, valid until %s\n", old.Serial, day(old.NotAfter))
	return nil
}

func issuedOf(is *ca.Issued) issuedJSON {
	r := is.Record
	return issuedJSON{
		Name: r.Name, Profile: r.Profile, Serial: r.Serial, Subject: r.Subject, SANs: nonNil(r.SANs),
		NotBefore: r.NotBefore, NotAfter: r.NotAfter, SHA256: r.Fingerprint,
		Cert: is.CertFile, Key: is.KeyFile, Chain: is.ChainFile,
	}
}

package main

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/urfave/cli/v2"

	"minica/ca"
	"minica/formats"
	"minica/revoke"
)

// hierarchyInitFlags are init's flags for a root and its intermediates
// (see docs/hierarchy.md).
func hierarchyInitFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "root", Usage: "create an offline root CA that signs only intermediates (pathLen 1, 20y, CRL 365d)"},
		&cli.IntFlag{Name: "path-len", Value: ca.DefaultRootPathLen, Usage: "with --root: how many intermediate levels may follow it"},
		&cli.BoolFlag{Name: "intermediate", Usage: "create an intermediate CA whose key stays here: --csr-out, then --import"},
		&cli.StringFlag{Name: "csr-out", Usage: "with --intermediate: write the CSR to carry to the root to `FILE`"},
		&cli.StringFlag{Name: "import", Usage: "with --intermediate: complete it with the certificate `FILE` from sign-intermediate"},
		&cli.StringFlag{Name: "root-cert", Usage: "with --import: the root's certificate `FILE`, when the certificate file does not hold it"},
		&cli.StringFlag{Name: "root-crl", Usage: "with --import: the root's current CRL `FILE` (PEM or DER)"},
		&cli.StringFlag{Name: "parent", Usage: "with --intermediate: sign it at once with the root CA in `ROOTDIR` (one machine, for labs)"},
		&cli.StringFlag{Name: "parent-password-file", Usage: "with --parent: read the root key's password from `FILE` (else $MINICA_PARENT_PASSWORD or a prompt)"},
		&cli.StringFlag{Name: "name", Usage: "with --parent: the intermediate's name in the root's database (default: the directory's base name)"},
	}
}

// checkHierarchyFlags refuses flags of hierarchyInitFlags that do not go
// together.
func checkHierarchyFlags(c *cli.Context) error {
	root, inter := c.Bool("root"), c.Bool("intermediate")
	if root && inter {
		return usagef(c, "--root and --intermediate contradict each other")
	}
	if c.IsSet("path-len") && !root {
		return usagef(c, "--path-len applies only to a root CA (--root)")
	}
	if c.IsSet("path-len") && c.Int("path-len") < 1 {
		return usagef(c, "--path-len %d: a root needs at least 1, to certify intermediates", c.Int("path-len"))
	}
	for _, f := range []string{"csr-out", "parent", "parent-password-file", "name", "root-cert", "root-crl", "import"} {
		if c.IsSet(f) && !inter {
			return usagef(c, "--%s applies only with --intermediate", f)
		}
	}
	if !inter {
		return nil
	}
	for _, f := range []string{"root-cert", "root-crl"} {
		if c.IsSet(f) {
			return usagef(c, "--%s applies only with --import", f)
		}
	}
	switch {
	case !c.IsSet("csr-out") && !c.IsSet("parent"):
		return withHint(usagef(c, "--intermediate needs --csr-out FILE, to carry the CSR to the root, or --parent ROOTDIR on one machine"),
			"minica init --intermediate --cn 'Acme Issuing CA 1' --csr-out int1.csr")
	case c.IsSet("csr-out") && c.IsSet("parent"):
		return usagef(c, "--csr-out and --parent contradict each other: the CSR travels, or the root is here")
	case c.IsSet("validity") && !c.IsSet("parent"):
		return usagef(c, "the root chooses an intermediate's validity: pass --validity to sign-intermediate")
	case c.IsSet("path-len"):
		return usagef(c, "an intermediate's pathLen is 0")
	}
	for _, f := range []string{"parent-password-file", "name"} {
		if c.IsSet(f) && !c.IsSet("parent") {
			return usagef(c, "--%s applies only with --parent", f)
		}
	}
	return nil
}

// runInitIntermediate creates a pending intermediate CA and writes its CSR
// (--csr-out), or has the root in --parent sign it at once.
func runInitIntermediate(c *cli.Context, e *env, dir string, opts ca.InitOptions) error {
	csrOut := c.String("csr-out")
	if csrOut != "" {
		if _, err := os.Lstat(csrOut); err == nil {
			return fmt.Errorf("%s %w", csrOut, errOutExists)
		}
	}
	var root *ca.CA
	if parent := c.String("parent"); parent != "" {
		var err error
		if root, err = openRootCA(parent, e); err != nil {
			return err
		}
		defer root.Close()
	}
	pending, err := ca.InitPending(dir, opts)
	if err != nil {
		return err
	}
	if root != nil {
		authority, err := signWithParent(c, e, dir, root, pending, opts)
		if err != nil {
			if rerr := ca.RemovePending(dir); rerr != nil {
				err = fmt.Errorf("%w (removing the new intermediate failed too: %v)", err, rerr)
			}
			return err
		}
		defer authority.Close()
		return printImported(c, e, authority, pending, nil)
	}
	if err := writeOutFiles([]outFile{{path: csrOut, data: pending.CSRPEM, perm: 0o644}}, false); err != nil {
		if rerr := ca.RemovePending(dir); rerr != nil {
			err = fmt.Errorf("%w (removing the new intermediate failed too: %v)", err, rerr)
		}
		return err
	}
	sum := sha256.Sum256(pending.CSRPEM)
	if c.Bool("json") {
		subject, _ := formats.DistinguishedName(pending.CSR.RawSubject)
		return writeJSON(e.stdout, map[string]any{
			"dir": dir, "subject": subject, "key_type": formats.KeyType(pending.CSR.PublicKey),
			"key_encrypted": pending.Key.Kind == ca.KeyInEncryptedFile, "csr": csrOut, "csr_sha256": hex.EncodeToString(sum[:]), "pending": true,
			"key_uri": keyURIString(pending.Key.URI),
		})
	}
	fmt.Fprintf(e.stdout, "created intermediate CA %q in %s; it waits for its certificate\n", opts.CommonName, dir)
	if u := pending.Key.URI; u != nil {
		fmt.Fprintf(e.stdout, "  key        %s, in %s (%s)\n", formats.KeyType(pending.CSR.PublicKey), u.TokenName(), u.ObjectName())
		fmt.Fprintf(e.stdout, "  key uri    %s\n", u)
	} else {
		fmt.Fprintf(e.stdout, "  key        %s%s, stays here\n", formats.KeyType(pending.CSR.PublicKey), map[bool]string{true: ", encrypted", false: ", NOT encrypted"}[pending.Key.Kind == ca.KeyInEncryptedFile])
	}
	if permits := permitsLine(pending.Constraints); permits != "" {
		fmt.Fprintf(e.stdout, "  asks for   %s\n", permits)
	}
	fmt.Fprintf(e.stdout, "  csr        %s\n", csrOut)
	fmt.Fprintf(e.stdout, "  sha256     %s  (compare with sha256sum on the root's machine)\n", hex.EncodeToString(sum[:]))
	fmt.Fprintf(e.stdout, "next: carry %s to the root, run 'minica --dir ROOTDIR sign-intermediate %s --out CERT' there,\n", csrOut, filepath.Base(csrOut))
	fmt.Fprintf(e.stdout, "      and bring CERT and the root's CRL back for 'minica init --intermediate --import CERT --root-crl FILE'\n")
	return nil
}

// keyURIString is u as a string, or nil (JSON null) for a key in a file.
func keyURIString(u *ca.KeyURI) any {
	if u == nil {
		return nil
	}
	return u.String()
}

// openRootCA opens the root CA in dir, refusing any other kind of CA.
func openRootCA(dir string, e *env) (*ca.CA, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("resolving the root CA directory: %w", err)
	}
	root, err := ca.OpenWith(abs, ca.OpenOptions{Engines: storeEngines()})
	if err != nil {
		return nil, err
	}
	root.Now = e.now
	if !root.IsRoot() {
		root.Close()
		return nil, withHint(fmt.Errorf("%w: %q is not a root CA", ca.ErrNotRoot, dir), "create the root with 'minica --dir ROOTDIR init --root --cn NAME'")
	}
	return root, nil
}

// signWithParent signs the pending intermediate with the root CA and
// imports the certificate with the root's current CRL.
func signWithParent(c *cli.Context, e *env, dir string, root *ca.CA, pending *ca.Pending, opts ca.InitOptions) (*ca.CA, error) {
	unlock, err := root.Lock(c.Duration("lock-timeout"))
	if err != nil {
		return nil, err
	}
	defer unlock()
	rootSecrets := &keySecrets{c: c, e: e, passwordFlag: "parent-password-file", passwordEnv: "MINICA_PARENT_PASSWORD", prompt: "root CA key password"}
	signer, err := rootSecrets.signer(root)
	if err != nil {
		return nil, err
	}
	name := c.String("name")
	if name == "" {
		name = filepath.Base(dir)
	}
	validity, err := validityValue(c)
	if err != nil {
		return nil, err
	}
	issued, err := root.SignIntermediate(signer, ca.IntermediateRequest{Name: name, CSR: pending.CSR, Validity: validity, Constraints: pending.Constraints})
	if err != nil {
		return nil, fmt.Errorf("signing the intermediate with the root %q: %w", root.Dir().Path(), err)
	}
	rootCRL, err := os.ReadFile(root.Path(ca.CRLDERFile))
	if err != nil {
		return nil, withHint(fmt.Errorf("reading the root's CRL: %w", err), "publish it with 'minica --dir %s crl'", root.Dir().Path())
	}
	authority, err := ca.ImportIntermediate(dir, ca.ImportOptions{Certs: []*x509.Certificate{issued.Cert, root.Cert}, RootCRL: rootCRL,
		Secret: opts.KeySecret, Now: e.now, LockTimeout: c.Duration("lock-timeout")})
	return authority, err
}

// importFlags are the flags that go with --import.
var importFlags = []string{"intermediate", "import", "root-cert", "root-crl", "password-file", "pin-file", "json", "dir", "lock-timeout"}

// runImportIntermediate completes a pending intermediate with its
// certificate (init --intermediate --import).
func runImportIntermediate(c *cli.Context, e *env) error {
	for _, f := range c.LocalFlagNames() {
		if !slices.Contains(importFlags, f) {
			return usagef(c, "--%s does not apply with --import: the pending intermediate has its key, name and constraints already", f)
		}
	}
	if !c.IsSet("root-crl") {
		return withHint(usagef(c, "--import needs --root-crl FILE: the root's current CRL, so that leaves of this CA can be checked up to the root"),
			"on the root's machine: minica --dir ROOTDIR crl --out root.crl")
	}
	dir, err := caDir(c)
	if err != nil {
		return err
	}
	certFile := c.String("import")
	certData, err := os.ReadFile(certFile)
	if err != nil {
		return fmt.Errorf("reading the certificate: %w", err)
	}
	certs, err := formats.ParseCertificates(certData)
	if err != nil {
		return fmt.Errorf("%s holds no PEM or DER certificate: %w", certFile, err)
	}
	opts := ca.ImportOptions{Certs: certs, Now: e.now, LockTimeout: c.Duration("lock-timeout")}
	if f := c.String("root-cert"); f != "" {
		data, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("reading the root certificate: %w", err)
		}
		roots, err := formats.ParseCertificates(data)
		if err != nil || len(roots) != 1 {
			return fmt.Errorf("%s: want one root certificate, PEM or DER", f)
		}
		opts.Root = roots[0]
	}
	if opts.RootCRL, err = os.ReadFile(c.String("root-crl")); err != nil {
		return fmt.Errorf("reading the root CRL: %w", err)
	}
	pending, err := ca.OpenPending(dir)
	if err != nil {
		return err
	}
	secrets := caKeySecrets(c, e)
	secrets.prompt = "intermediate CA key password"
	var authority *ca.CA
	err = secrets.open(func(secret ca.SecretFunc) (err error) {
		opts.Secret = secret
		authority, err = ca.ImportIntermediate(dir, opts)
		return err
	})
	if err != nil {
		return err
	}
	defer authority.Close()
	return printImported(c, e, authority, pending, map[string][]byte{"cert": certData, "root_crl": opts.RootCRL})
}

// printImported reports an intermediate that became usable; sums are the
// files that travelled, for their SHA-256 sums.
func printImported(c *cli.Context, e *env, authority *ca.CA, pending *ca.Pending, sums map[string][]byte) error {
	cert, root := authority.Cert, authority.Root()
	rootSum := sha256.Sum256(root.Raw)
	rootCRL, err := authority.LoadRootCRL()
	if err != nil {
		return err
	}
	if st := revoke.Freshness(rootCRL.ThisUpdate(), rootCRL.NextUpdate(), revoke.Thresholds{}, e.now()); !st.Usable() {
		warnf(e.stderr, "the root CRL %s is %s (next update %s): leaves of this CA fail verification until the root signs a new one for 'minica crl import-root FILE'",
			rootCRL.Number(), st, day(rootCRL.NextUpdate()))
	}
	if c.Bool("json") {
		out := map[string]any{
			"dir": authority.Dir().Path(), "subject": subjectOf(cert), "serial": ca.SerialHex(cert.SerialNumber),
			"not_after": cert.NotAfter.UTC(), "root": subjectOf(root), "root_sha256": hex.EncodeToString(rootSum[:]),
			"root_crl_number": rootCRL.Number().String(), "root_crl_next_update": rootCRL.NextUpdate().UTC(),
			"cert": authority.CertFile(), "chain": authority.Path("chain.pem"),
		}
		for k, v := range sums {
			s := sha256.Sum256(v)
			out[k+"_sha256"] = hex.EncodeToString(s[:])
		}
		return writeJSON(e.stdout, out)
	}
	fmt.Fprintf(e.stdout, "intermediate CA %q in %s is ready\n", cert.Subject.CommonName, authority.Dir().Path())
	fmt.Fprintf(e.stdout, "  serial     %s\n", ca.SerialHex(cert.SerialNumber))
	fmt.Fprintf(e.stdout, "  not after  %s\n", day(cert.NotAfter))
	if permits := permitsLine(pending.Constraints); permits != "" {
		fmt.Fprintf(e.stdout, "  permits    %s\n", permits)
	}
	fmt.Fprintf(e.stdout, "  root       %q, SHA-256 fingerprint %s\n", root.Subject.CommonName, hex.EncodeToString(rootSum[:]))
	fmt.Fprintf(e.stdout, "  root CRL   %s, next update %s\n", rootCRL.Number(), day(rootCRL.NextUpdate()))
	for _, k := range []string{"cert", "root_crl"} {
		if v, ok := sums[k]; ok {
			s := sha256.Sum256(v)
			fmt.Fprintf(e.stdout, "  sha256     %s  (%s, as read)\n", hex.EncodeToString(s[:]), map[string]string{"cert": "certificate file", "root_crl": "root CRL file"}[k])
		}
	}
	fmt.Fprintf(e.stdout, "  chain      %s\n", authority.Path("chain.pem"))
	return nil
}

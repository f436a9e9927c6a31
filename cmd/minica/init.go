package main

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"minica/ca"
	"minica/formats"
)

func initCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "init",
		Usage:     "create a private CA in the CA directory",
		ArgsUsage: " ",
		Description: "Creates the CA key (encrypted with a password unless --no-password) and a\n" +
			"self-signed CA certificate. It never overwrites an existing CA.\n\n" +
			"Name constraints: with any --permit-* flag the CA certificate constrains\n" +
			"every name type, and verifiers enforce it. A type without a --permit-* of\n" +
			"its own is excluded: a CA made with --permit-dns alone certifies no IP\n" +
			"address, email or URI. minica refuses to issue a name outside them.\n\n" +
			"A hierarchy (see docs/hierarchy.md): --root makes an offline root that signs\n" +
			"only intermediates (pathLen 1, 20y, CRLs of 365d). --intermediate --csr-out FILE\n" +
			"makes an intermediate's key here and the CSR to carry to the root, whose\n" +
			"sign-intermediate gives the certificate back for --intermediate --import CERT\n" +
			"--root-crl FILE; --parent ROOTDIR does all three on one machine.\n\n" +
			"Example:\n   minica init --cn 'Acme Internal CA' --org 'Acme' --permit-dns acme.internal --permit-email acme.com\n" +
			"   minica --dir /media/usb/root init --root --cn 'Acme Root CA'\n" +
			"   minica init --intermediate --cn 'Acme Issuing CA 1' --permit-dns example.com --csr-out int1.csr\n" +
			"   minica init --intermediate --import int1.crt --root-crl root.crl",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "cn", Usage: "the CA's common name (required)"},
			&cli.StringFlag{Name: "org", Usage: "organization (O)"},
			&cli.StringFlag{Name: "ou", Usage: "organizational unit (OU)"},
			&cli.StringFlag{Name: "country", Usage: "two-letter country code (C)"},
			&cli.StringFlag{Name: "province", Usage: "state or province (ST)"},
			&cli.StringFlag{Name: "locality", Usage: "locality (L)"},
			keyTypeFlag(string(ca.ECDSAP256), "ecdsa-p256, ecdsa-p384, rsa-2048, rsa-3072, rsa-4096 or ed25519"),
			validityFlag("", "lifetime, e.g. 10y or 3650d (default: 10y, 20y with --root)"),
			&cli.StringFlag{Name: "crl-url", Usage: "CRL distribution point for every leaf (see: minica crl url)"},
			&cli.StringFlag{Name: "ocsp-url", Usage: "OCSP responder URL (AIA) for every leaf, answered by minica serve (see: minica ocsp url)"},
			&cli.StringFlag{Name: "enroll-url", Usage: "base `URL` of enrollment links, serve's public HTTPS address (see: minica enroll)"},
			&cli.BoolFlag{Name: "no-password", Usage: "store the CA key unencrypted"},
			passwordFileFlag(),
			&cli.StringFlag{Name: "key-uri", Usage: "keep the CA key in a PKCS#11 token: its RFC 7512 `URI`, such as 'pkcs11:token=minica;object=ca?module-path=/usr/lib/softhsm/libsofthsm2.so' (never with a PIN); a new key is made there"},
			&cli.BoolFlag{Name: "existing-key", Usage: "with --key-uri: use the key the URI names, which must exist, instead of making one"},
			pinFileFlag(),
			jsonFlag(),
		}, append(constraintFlags(), hierarchyInitFlags()...)...),
		Action: func(c *cli.Context) error { return runInit(c, e) },
	}
}

func runInit(c *cli.Context, e *env) error {
	if err := wantArgs(c, 0, 0); err != nil {
		return err
	}
	if c.Bool("intermediate") && c.IsSet("import") {
		return runImportIntermediate(c, e)
	}
	if err := checkHierarchyFlags(c); err != nil {
		return err
	}
	opts, err := initOptions(c)
	if err != nil {
		return err
	}
	dir, err := caDir(c)
	if err != nil {
		return err
	}
	if opts.KeyType == ca.Ed25519 {
		warnf(e.stderr, "browsers cannot use Ed25519 client certificates; prefer ecdsa-p256 for a CA that issues them")
	}
	if c.Bool("no-password") && c.IsSet("password-file") {
		return usagef(c, "--no-password and --password-file contradict each other")
	}
	// With --parent, --pin-file is the PIN of the root's token.
	if c.IsSet("key-uri") || c.IsSet("existing-key") || (c.IsSet("pin-file") && !c.IsSet("parent")) {
		if err := tokenInitOptions(c, e, &opts); err != nil {
			return err
		}
	} else if !c.Bool("no-password") {
		if opts.Password, err = e.password(c, "MINICA_PASSWORD", "CA key password", true); err != nil {
			return withHint(err, "pass --password-file FILE, set MINICA_PASSWORD, or --no-password to store the key unencrypted")
		}
	}
	opts.Now = e.now
	if c.Bool("intermediate") && storeEngine(c.String("store")) != nil {
		return withHint(errors.New("an intermediate CA starts with its database in files"),
			"init it without --store (and MINICA_STORE), then move the database with 'minica store copy --to URL --use'")
	}
	if c.Bool("intermediate") {
		return runInitIntermediate(c, e, dir, opts)
	}
	// A CRL exists from the first day, so that servers can check revocation
	// at once; Init publishes it before the CA certificate, so that a failed
	// init leaves no CA without one.
	opts.FirstCRL = true
	opts.Store, opts.Engines = c.String("store"), storeEngines()
	authority, err := ca.Init(dir, opts)
	if errors.Is(err, ca.ErrKeyNotFound) {
		return withHint(err, "check object= and id= in the key URI (p11tool --list-privkeys or pkcs11-tool --list-objects shows the keys), or leave out --existing-key to make a new key")
	}
	if err != nil {
		return err
	}
	defer authority.Close()
	return printInit(c, e, authority, opts)
}

func initOptions(c *cli.Context) (ca.InitOptions, error) {
	kt, err := keyTypeValue(c)
	if err != nil {
		return ca.InitOptions{}, err
	}
	validity, err := validityValue(c)
	if err != nil {
		return ca.InitOptions{}, err
	}
	k, err := constraintValues(c)
	if err != nil {
		return ca.InitOptions{}, err
	}
	if c.String("cn") == "" {
		return ca.InitOptions{}, usagef(c, "--cn is required: the CA's common name, such as 'Acme Internal CA'")
	}
	opts := ca.InitOptions{
		CommonName:         c.String("cn"),
		Organization:       c.String("org"),
		OrganizationalUnit: c.String("ou"),
		Country:            c.String("country"),
		Province:           c.String("province"),
		Locality:           c.String("locality"),
		KeyType:            kt,
		Validity:           validity,
		PermittedDNS:       k.PermittedDNS,
		PermittedEmails:    k.PermittedEmails,
		PermittedURIs:      k.PermittedURIs,
		PermittedIPs:       k.PermittedIPs,
		ExcludedDNS:        k.ExcludedDNS,
		ExcludedEmails:     k.ExcludedEmails,
		ExcludedURIs:       k.ExcludedURIs,
		ExcludedIPs:        k.ExcludedIPs,
		Root:               c.Bool("root"),
		MaxPathLen:         c.Int("path-len"),
	}
	if u := c.String("crl-url"); u != "" {
		if err := ca.ValidateCRLURL(u); err != nil {
			return opts, usagef(c, "--crl-url: %v", err)
		}
		opts.Settings = ca.DefaultSettings()
		opts.Settings.CRLURL = u
	}
	if u := c.String("ocsp-url"); u != "" {
		if err := ca.ValidateOCSPURL(u); err != nil {
			return opts, usagef(c, "--ocsp-url: %v", err)
		}
		if opts.Settings.Version == 0 {
			opts.Settings = ca.DefaultSettings()
		}
		opts.Settings.OCSPURL = u
	}
	if u := c.String("enroll-url"); u != "" {
		if err := ca.ValidateEnrollURL(u); err != nil {
			return opts, usagef(c, "--enroll-url: %v", err)
		}
		if opts.Settings.Version == 0 {
			opts.Settings = ca.DefaultSettings()
		}
		opts.Settings.EnrollURL = strings.TrimSuffix(u, "/")
	}
	return opts, nil
}

func printInit(c *cli.Context, e *env, authority *ca.CA, opts ca.InitOptions) error {
	cert := authority.Cert
	src, err := authority.KeySource()
	if err != nil {
		return err
	}
	encrypted := src.Kind == ca.KeyInEncryptedFile
	if c.Bool("json") {
		out := map[string]any{
			"dir":           authority.Dir().Path(),
			"subject":       subjectOf(cert),
			"serial":        ca.SerialHex(cert.SerialNumber),
			"not_after":     cert.NotAfter.UTC(),
			"key_type":      formats.KeyType(cert.PublicKey),
			"key_encrypted": encrypted,
			"cert":          authority.CertFile(),
		}
		if r := authority.Settings.Role; r != "" {
			out["role"] = string(r)
		}
		if u := src.URI; u != nil {
			out["key_uri"] = u.String()
		}
		return writeJSON(e.stdout, out)
	}
	fmt.Fprintf(e.stdout, "created CA %q in %s\n", cert.Subject.CommonName, authority.Dir().Path())
	if u := src.URI; u != nil {
		fmt.Fprintf(e.stdout, "  key        %s, in %s (%s)\n", formats.KeyType(cert.PublicKey), u.TokenName(), u.ObjectName())
		fmt.Fprintf(e.stdout, "  key uri    %s\n", u)
	} else {
		fmt.Fprintf(e.stdout, "  key        %s%s\n", formats.KeyType(cert.PublicKey), map[bool]string{true: ", encrypted", false: ", NOT encrypted"}[encrypted])
	}
	fmt.Fprintf(e.stdout, "  serial     %s\n", ca.SerialHex(cert.SerialNumber))
	fmt.Fprintf(e.stdout, "  not after  %s\n", day(cert.NotAfter))
	if permits := permitsLine(opts.Constraints()); permits != "" {
		fmt.Fprintf(e.stdout, "  permits    %s\n", permits)
	}
	fmt.Fprintf(e.stdout, "  cert       %s\n", authority.CertFile())
	if authority.IsRoot() {
		fmt.Fprintf(e.stdout, "  root       pathLen %d, CRLs for %s; it signs only intermediates: 'minica --dir %s sign-intermediate CSR'\n",
			cert.MaxPathLen, ca.FormatDuration(time.Duration(authority.Settings.CRLLifetime)), authority.Dir().Path())
	}
	return nil
}

// permitsLine sums up the name constraints k, such as "DNS example.com;
// no email, URI or IP names", or "" for an unconstrained CA.
func permitsLine(k ca.Constraints) string {
	if k.Empty() {
		return ""
	}
	if line := excludesLine(k); !k.Permits() {
		return line
	} else if line != "" {
		return permittedLine(k) + "; " + line
	}
	return permittedLine(k)
}

func excludesLine(k ca.Constraints) string {
	var parts []string
	for _, t := range []struct {
		kind   string
		values []string
	}{{"DNS", k.ExcludedDNS}, {"email", k.ExcludedEmails}, {"URI", k.ExcludedURIs}, {"IP", ipStrings(k.ExcludedIPs)}} {
		if len(t.values) > 0 {
			parts = append(parts, t.kind+" "+strings.Join(t.values, ", "))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "excludes " + strings.Join(parts, ", ")
}

func ipStrings(nets []*net.IPNet) []string {
	var out []string
	for _, n := range nets {
		out = append(out, n.String())
	}
	return out
}

func permittedLine(opts ca.Constraints) string {
	ips := ipStrings(opts.PermittedIPs)
	var permits, none []string
	for _, t := range []struct {
		kind   string
		values []string
	}{{"DNS", opts.PermittedDNS}, {"email", opts.PermittedEmails}, {"URI", opts.PermittedURIs}, {"IP", ips}} {
		if len(t.values) == 0 {
			none = append(none, t.kind)
			continue
		}
		permits = append(permits, t.kind+" "+strings.Join(t.values, ", "))
	}
	if len(permits) == 0 {
		return ""
	}
	if len(none) > 0 {
		last := len(none) - 1
		list := none[last]
		if last > 0 {
			list = strings.Join(none[:last], ", ") + " or " + list
		}
		permits = append(permits, "no "+list+" names")
	}
	return strings.Join(permits, "; ")
}

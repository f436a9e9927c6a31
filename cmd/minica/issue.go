package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"minica/ca"
)

func issueCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "issue",
		Usage: "issue a server or client certificate with a new key",
		Description: "Example:\n   minica issue server web1 --dns web1.example.com --ip 10.0.0.5\n" +
			"   minica issue client simon --email simon@example.com",
		Subcommands: []*cli.Command{
			issueProfileCommand(e, ca.Server),
			issueProfileCommand(e, ca.Client),
		},
	}
}

// missingSubcommand is the action of commands that only group others.
func missingSubcommand(c *cli.Context) error {
	if c.NArg() > 0 {
		return unknownSubcommand(strings.Fields(c.Command.HelpName), c.Args().First(), c.Command.Subcommands)
	}
	cli.ShowSubcommandHelp(c)
	return &exitError{code: 2}
}

func issueProfileCommand(e *env, p ca.Profile) *cli.Command {
	example := "minica issue server web1 --dns web1.example.com --ip 10.0.0.5"
	usage := "issue a server certificate (EKU serverAuth; NAME is its default DNS name)"
	if p == ca.Client {
		example = "minica issue client simon --email simon@example.com"
		usage = "issue a client certificate (EKU clientAuth; NAME is its default CN)"
	}
	return &cli.Command{
		Name:      string(p),
		Usage:     usage,
		ArgsUsage: "NAME | --from FILE",
		Description: "Writes the certificate, its key (0600) and the chain into the CA directory.\n" +
			"With --from, issues one certificate per row of FILE under one lock (see docs/batch.md):\n" +
			"every row is checked before the first key is made.\n\nExample:\n   " + example +
			"\n   minica issue " + string(p) + " --from " + string(p) + "s.csv" + batchExampleP12(p),
		Flags:  append(append(append(append(leafFlags(p), keyTypeFlag("", leafKeyTypeUsage), passwordFileFlag(), pinFileFlag()), issueP12Flags()...), copyFlags(true)...), batchFlags()...),
		Action: func(c *cli.Context) error { return runIssue(c, e, p) },
	}
}

func batchExampleP12(p ca.Profile) string {
	if p == ca.Client {
		return " --p12 --p12-password-out passwords.csv"
	}
	return ""
}

// leafFlags are the flags shared by issue and sign.
func leafFlags(p ca.Profile) []cli.Flag {
	flags := []cli.Flag{
		cnFlag(),
		&cli.StringSliceFlag{Name: "dns", Usage: "DNS name SAN (repeatable)"},
		ipFlag(),
		emailFlag(),
		uriFlag(),
		orgFlag(),
		ouFlag(),
		validityFlag("", "lifetime such as 90d or 1y (default: 825d server, 365d client)"),
		nameForceFlag(),
		jsonFlag(),
	}
	if p == ca.Client {
		flags = append(flags, noEmailInSubjectFlag())
	}
	return flags
}

// leafRequest builds an issuance request from the shared flags.
func leafRequest(c *cli.Context, name string, p ca.Profile) (ca.Request, error) {
	req := ca.Request{
		Name:               name,
		Profile:            p,
		CommonName:         c.String("cn"),
		Organization:       c.StringSlice("org"),
		OrganizationalUnit: c.StringSlice("ou"),
		DNSNames:           c.StringSlice("dns"),
		Emails:             c.StringSlice("email"),
		URIs:               c.StringSlice("uri"),
		EmailInSubject:     p == ca.Client && !c.Bool("no-email-in-subject"),
		Force:              c.Bool("force"),
	}
	if p == ca.Server && req.CommonName != "" && req.CommonName != name {
		return req, usagef(c, "--cn: a server certificate's CN is its NAME (%q)", name)
	}
	var err error
	if req.IPs, err = ipValues(c); err != nil {
		return req, err
	}
	if req.Validity, err = validityValue(c); err != nil {
		return req, err
	}
	if req.KeyType, err = keyTypeValue(c); err != nil {
		return req, err
	}
	return req, nil
}

func runIssue(c *cli.Context, e *env, p ca.Profile) error {
	if c.IsSet("from") {
		return runIssueBatch(c, e, p)
	}
	if c.IsSet("p12-dir") {
		return usagef(c, "--p12-dir needs --from (one bundle goes to --p12-out)")
	}
	if err := wantArgs(c, 1, 1); err != nil {
		return err
	}
	req, err := leafRequest(c, c.Args().First(), p)
	if err != nil {
		return err
	}
	if err := checkIssueName(c, req.Name, p); err != nil {
		return err
	}
	p12, err := e.prepareIssueP12(c, req.Name)
	if err != nil {
		return err
	}
	issued, err := issueAndPrint(c, e, req)
	if err != nil {
		return err
	}
	if p == ca.Client && len(req.Emails) == 0 {
		fmt.Fprintf(e.stderr, "minica: note: %q has no email address: the app will get no email header (X-SSL-Client-Email) for it; add one with --email\n", req.Name)
	}
	return e.writeIssuedP12(c, p12, issued.Record)
}

// checkIssueName validates NAME as ca.ValidateName does; a client NAME that
// is an email address gets a hint with the command that works, since the
// address belongs in --email.
func checkIssueName(c *cli.Context, name string, p ca.Profile) error {
	err := ca.ValidateName(name)
	if err == nil {
		return nil
	}
	if p != ca.Client || !errors.Is(err, ca.ErrNameAt) {
		return usagef(c, "%v", err)
	}
	local, _, _ := strings.Cut(name, "@")
	if ca.ValidateName(local) != nil {
		return withHint(usagef(c, "%v", err), "use a plain name and give the address with --email")
	}
	return withHint(usagef(c, "%v", err), "use a plain name and give the address with --email: minica issue client %s --email %s", local, shellQuote(name))
}

// issueLocked validates the request, locks the CA, loads its key and issues.
func issueLocked(c *cli.Context, e *env, req ca.Request) error {
	_, err := issueAndPrint(c, e, req)
	return err
}

// issueAndPrint is issueLocked returning what it issued.
func issueAndPrint(c *cli.Context, e *env, req ca.Request) (*ca.Issued, error) {
	if err := ca.ValidateName(req.Name); err != nil {
		return nil, usagef(c, "%v", err)
	}
	authority, unlock, err := lockCA(c, e)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := refuseRoot(authority); err != nil {
		return nil, err
	}
	// A rerun after a kill settles the interrupted issuance of the name
	// first, as check would: a certificate that reached the disk then
	// holds the name, and is not issued twice.
	if err := finishInterrupted(e, authority, req.Name); err != nil {
		return nil, err
	}
	signer, err := loadSigner(c, e, authority)
	if err != nil {
		return nil, err
	}
	copies, err := copyTargets(c)
	if err != nil {
		return nil, err
	}
	issued, err := authority.Issue(signer, req)
	if err != nil {
		return nil, err
	}
	if err := writeCopies(c, e, copies, issued); err != nil {
		return issued, err
	}
	if req.KeyType == ca.Ed25519 && req.Profile == ca.Client {
		warnf(e.stderr, "browsers cannot use Ed25519 client certificates")
	}
	if err := printIssued(c, e, issued); err != nil {
		return issued, err
	}
	warnUnresolvable(e.stderr, issued.Record)
	return issued, nil
}

func printIssued(c *cli.Context, e *env, is *ca.Issued) error {
	r := is.Record
	if c.Bool("json") {
		return writeJSON(e.stdout, issuedJSON{
			Name: r.Name, Profile: r.Profile, Serial: r.Serial, Subject: r.Subject, SANs: nonNil(r.SANs),
			NotBefore: r.NotBefore, NotAfter: r.NotAfter, SHA256: r.Fingerprint,
			Cert: is.CertFile, Key: is.KeyFile, Chain: is.ChainFile,
		})
	}
	fmt.Fprintf(e.stdout, "issued %s certificate %q\n", r.Profile, r.Name)
	fmt.Fprintf(e.stdout, "  sans       %s\n", sanText(r.SANs))
	fmt.Fprintf(e.stdout, "  serial     %s\n", r.Serial)
	fmt.Fprintf(e.stdout, "  not after  %s\n", day(r.NotAfter))
	fmt.Fprintf(e.stdout, "  cert       %s\n", is.CertFile)
	if is.KeyFile != "" {
		fmt.Fprintf(e.stdout, "  key        %s\n", is.KeyFile)
	}
	fmt.Fprintf(e.stdout, "  chain      %s\n", is.ChainFile)
	return nil
}

type issuedJSON struct {
	Name      string     `json:"name"`
	Profile   ca.Profile `json:"profile"`
	Serial    string     `json:"serial"`
	Subject   string     `json:"subject"`
	SANs      []string   `json:"sans"`
	NotBefore time.Time  `json:"not_before"`
	NotAfter  time.Time  `json:"not_after"`
	SHA256    string     `json:"sha256"`
	Cert      string     `json:"cert"`
	Key       string     `json:"key,omitempty"`
	Chain     string     `json:"chain"`
}

// refuseRoot is the error of a command that makes leaves run on a root CA
// (ca.ErrRootCA, naming the directory; hints.go adds where leaves come
// from), or nil on a CA that issues them.
func refuseRoot(authority *ca.CA) error {
	if authority.IsRoot() {
		return fmt.Errorf("%w: %q is a root CA", ca.ErrRootCA, authority.Dir().Path())
	}
	return nil
}

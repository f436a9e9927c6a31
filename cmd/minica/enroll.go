package main

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"minica/ca"
)

func enrollCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "enroll",
		Usage:     "make a one-time link through which a person gets a client certificate on their device",
		ArgsUsage: "[NAME]",
		Description: "Creates a pending enrollment for NAME, with the identity flags of 'minica issue client',\n" +
			"and prints its link once: BASE/enroll/TOKEN, valid for --expires (default 24h, at\n" +
			"most 30d) and for one use; on a terminal only, or with --json for a script. minica\n" +
			"serve --enroll answers it over HTTPS: the person picks a password, and serve generates\n" +
			"the key, issues the certificate and sends the bundle (.p12 or Apple .mobileconfig).\n" +
			"Only hashes of the token are stored: the link cannot be shown again. BASE is\n" +
			"--base-url, else the CA's setting (--set-base-url, or init --enroll-url). See\n" +
			"docs/enrollment.md.\n\n" +
			"Example:\n   minica enroll --set-base-url https://pki.example.com:8443\n" +
			"   minica enroll simon --email simon@example.com\n" +
			"   minica enroll --list\n   minica enroll --cancel simon",
		Flags: []cli.Flag{
			cnFlag(), emailFlag(), uriFlag(), orgFlag(), ouFlag(),
			&cli.StringSliceFlag{Name: "dns", Usage: "DNS name SAN (repeatable)"}, ipFlag(),
			validityFlag("", "lifetime of the certificate such as 90d or 1y (default: the CA's client validity)"),
			noEmailInSubjectFlag(),
			keyTypeFlag("", "the key serve generates: ecdsa-p256 (default), ecdsa-p384, rsa-2048, rsa-3072 or rsa-4096"),
			nameForceFlag(),
			&cli.StringFlag{Name: "expires", Value: ca.FormatDuration(ca.DefaultEnrollmentLifetime), Usage: "the link stops working after `DURATION` (at most 30d)"},
			&cli.StringFlag{Name: "base-url", Usage: "the link's base, serve's public HTTPS address such as `URL` https://pki.example.com:8443 (default: the CA's setting)"},
			&cli.BoolFlag{Name: "list", Usage: "list pending links: name, ID, created, expires (--all: every link and what became of it)"},
			&cli.BoolFlag{Name: "all", Usage: "with --list, also used, cancelled, failed and expired links"},
			&cli.StringFlag{Name: "cancel", Usage: "cancel the pending link of `NAME` or ID"},
			&cli.StringFlag{Name: "set-base-url", Usage: "store `URL` as the CA's base of enrollment links"},
			&cli.BoolFlag{Name: "clear-base-url", Usage: "remove the CA's base of enrollment links"},
			jsonFlag(),
		},
		Action: func(c *cli.Context) error { return runEnroll(c, e) },
	}
}

// enrollIdentityFlags are the flags that describe the certificate, for
// NAME only.
var enrollIdentityFlags = []string{"cn", "email", "uri", "dns", "ip", "org", "ou", "validity", "no-email-in-subject", "key-type", "force", "expires", "base-url"}

func runEnroll(c *cli.Context, e *env) error {
	mode, err := chooseMode(c, ca.KindLink, []string{"list", "cancel", "set-base-url", "clear-base-url"}, enrollIdentityFlags)
	if err != nil {
		return err
	}
	switch mode {
	case "--list":
		return listEnrollments(c, e)
	case "--cancel":
		return cancelEnrollment(c, e)
	case "--set-base-url", "--clear-base-url":
		return setEnrollURL(c, e)
	}
	return createEnrollment(c, e)
}

// chooseMode returns what the command line of enroll or token (kind)
// asks for: "NAME" (create one), or the one of modes (flag names) that is
// set, as "--list". None, or two, is a usage error, as are --all without
// --list and a flag of creating (one of creating) in another mode.
func chooseMode(c *cli.Context, kind ca.EnrollKind, modes, creating []string) (string, error) {
	if err := wantArgs(c, 0, 1); err != nil {
		return "", err
	}
	var set []string
	for _, m := range modes {
		if c.IsSet(m) {
			set = append(set, "--"+m)
		}
	}
	if c.NArg() == 1 {
		set = append(set, "NAME")
	}
	w := kindOf(kind)
	switch {
	case len(set) == 0:
		return "", usagef(c, "%s needs a NAME, or one of --%s", w.command, strings.Join(modes, ", --"))
	case len(set) > 1:
		return "", usagef(c, "%s and %s exclude each other", set[0], set[1])
	case c.IsSet("all") && set[0] != "--list":
		return "", usagef(c, "--all goes with --list")
	}
	if set[0] != "NAME" {
		for _, f := range creating {
			if c.IsSet(f) {
				return "", usagef(c, "--%s is for creating a %s (minica %s NAME)", f, w.short, w.command)
			}
		}
	}
	return set[0], nil
}

// enrollJSON is one enrollment in --json output; URL only when created.
type enrollJSON struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Status    string    `json:"status"`
	URL       string    `json:"url,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	UsedAt    time.Time `json:"used_at,omitzero"`
	UsedFrom  string    `json:"used_from,omitempty"`
	Serial    string    `json:"serial,omitempty"`
	Error     string    `json:"error,omitempty"`
}

func enrollmentJSON(en *ca.Enrollment, now time.Time) enrollJSON {
	return enrollJSON{
		ID: en.ID, Name: en.Name, Status: string(en.StatusAt(now)), CreatedAt: en.CreatedAt, ExpiresAt: en.ExpiresAt,
		UsedAt: en.UsedAt, UsedFrom: en.UsedFrom, Serial: en.Serial, Error: en.Error,
	}
}

// enrollIdentity reads the identity flags, checked as issue client checks
// them, and --expires.
func enrollIdentity(c *cli.Context, name string) (ca.EnrollIdentity, time.Duration, error) {
	id, err := leafIdentity(c, name, ca.Client)
	if err != nil {
		return id, 0, err
	}
	if id.KeyType == ca.Ed25519 {
		return id, 0, usagef(c, "--key-type ed25519: browsers cannot use Ed25519 client certificates; use ecdsa-p256 or rsa-2048")
	}
	lifetime, err := expiresValue(c)
	return id, lifetime, err
}

// leafIdentity reads the identity flags of a certificate of profile p for
// name, checked as issue checks them.
func leafIdentity(c *cli.Context, name string, p ca.Profile) (ca.EnrollIdentity, error) {
	if err := checkIssueName(c, name, p); err != nil {
		return ca.EnrollIdentity{}, err
	}
	req, err := leafRequest(c, name, p)
	if err != nil {
		return ca.EnrollIdentity{}, err
	}
	return ca.EnrollIdentity{
		CommonName: req.CommonName, Organization: req.Organization, OrganizationalUnit: req.OrganizationalUnit,
		Emails: req.Emails, URIs: req.URIs, DNSNames: req.DNSNames, IPs: req.IPs, EmailInSubject: req.EmailInSubject,
		Validity: ca.Duration(req.Validity), KeyType: req.KeyType, Force: req.Force,
	}, nil
}

// expiresValue parses --expires, the lifetime of a link or token, checked
// with ca.ValidateEnrollLifetime.
func expiresValue(c *cli.Context) (time.Duration, error) {
	lifetime, err := ca.ParseDuration(c.String("expires"))
	if err != nil {
		return 0, usagef(c, "--expires: %v", err)
	}
	if err := ca.ValidateEnrollLifetime(lifetime); err != nil {
		return 0, usagef(c, "--expires: %v", err)
	}
	return lifetime, nil
}

func createEnrollment(c *cli.Context, e *env) error {
	name := c.Args().First()
	id, lifetime, err := enrollIdentity(c, name)
	if err != nil {
		return err
	}
	if err := secretOnTerminal(c, e, ca.KindLink); err != nil {
		return err
	}
	base := c.String("base-url")
	if base != "" {
		if err := ca.ValidateEnrollURL(base); err != nil {
			return usagef(c, "--base-url: %v", err)
		}
	}
	authority, unlock, err := lockCA(c, e)
	if err != nil {
		return err
	}
	defer unlock()
	if err := refuseRoot(authority); err != nil {
		return err
	}
	if base == "" {
		if base = authority.Settings.EnrollURL; base == "" {
			return withHint(usagef(c, "no base URL for the link: pass --base-url, or store one"),
				"minica enroll --set-base-url https://HOST:PORT (the public address of minica serve --listen-tls)")
		}
	}
	created, err := authority.CreateEnrollment(name, id, lifetime)
	if err != nil {
		return pendingHint(name, err)
	}
	en, link := created.Enrollment, ca.EnrollLink(base, created.Token)
	if c.Bool("json") {
		j := enrollmentJSON(en, e.now())
		j.URL = link
		return writeJSON(e.stdout, j)
	}
	fmt.Fprintf(e.stdout, "enrollment link for %q (id %s), one use, valid until %s:\n%s\n", en.Name, en.ID, day(en.ExpiresAt), link)
	fmt.Fprintf(e.stderr, "minica: note: the link is shown only this once and works for whoever has it: send it to %s alone, over a channel you trust\n", en.Name)
	return nil
}

func listEnrollments(c *cli.Context, e *env) error {
	return listKind(c, e, ca.KindLink, func(en *ca.Enrollment, now time.Time) any { return enrollmentJSON(en, now) })
}

// listKind prints the enrollments of kind for --list: a table (a token's
// row names its profile), or with --json one toJSON object a line.
func listKind(c *cli.Context, e *env, kind ca.EnrollKind, toJSON func(*ca.Enrollment, time.Time) any) error {
	if err := wantArgs(c, 0, 0); err != nil {
		return err
	}
	authority, err := openCA(c, e)
	if err != nil {
		return err
	}
	defer authority.Close()
	now := e.now()
	list, err := enrollmentsOf(c, e, authority, kind, now)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		for _, en := range list {
			if err := writeJSON(e.stdout, toJSON(en, now)); err != nil {
				return err
			}
		}
		return nil
	}
	if len(list) == 0 {
		if !c.Bool("all") {
			fmt.Fprintf(e.stderr, "minica: no pending %ss\n", kindOf(kind).noun)
		}
		return nil
	}
	profile := func(string) string { return "" } // links are all client
	if kind == ca.KindToken {
		profile = func(v string) string { return fmt.Sprintf("%-7s ", v) }
	}
	fmt.Fprintf(e.stdout, "%-20s %-12s %s%-9s %-20s %s\n", "NAME", "ID", profile("PROFILE"), "STATUS", "CREATED", "EXPIRES")
	for _, en := range list {
		fmt.Fprintf(e.stdout, "%-20s %-12s %s%-9s %-20s %s", en.Name, en.ID, profile(string(en.Profile())), en.StatusAt(now), day(en.CreatedAt), day(en.ExpiresAt))
		printEnrollmentUse(e, en, now)
	}
	return nil
}

// enrollmentsOf returns the enrollments of kind, oldest first: the pending
// ones, or with --all every one. One that does not decode (its kind is
// unknown) is skipped with a warning.
func enrollmentsOf(c *cli.Context, e *env, authority *ca.CA, kind ca.EnrollKind, now time.Time) ([]*ca.Enrollment, error) {
	var list []*ca.Enrollment
	for en, err := range authority.Enrollments() {
		if errors.Is(err, ca.ErrCorruptEnrollment) {
			warnf(e.stderr, "%v: skipped (a %s whose writing a crash cut short; its token was never shown)", err, kindOf(kind).noun)
			continue
		}
		if err != nil {
			return nil, err
		}
		if en.Kind == kind && (c.Bool("all") || en.StatusAt(now) == ca.EnrollPending) {
			list = append(list, en)
		}
	}
	slices.SortFunc(list, func(a, b *ca.Enrollment) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return list, nil
}

// printEnrollmentUse ends a row of --list: for a used or failed
// enrollment, when and from where, and the serial issued.
func printEnrollmentUse(e *env, en *ca.Enrollment, now time.Time) {
	if st := en.StatusAt(now); st == ca.EnrollUsed || st == ca.EnrollFailed {
		fmt.Fprintf(e.stdout, "  used %s from %s", day(en.UsedAt), en.UsedFrom)
		if en.Serial != "" {
			fmt.Fprintf(e.stdout, ", serial %s", en.Serial)
		}
	}
	fmt.Fprintln(e.stdout)
}

func cancelEnrollment(c *cli.Context, e *env) error {
	en, err := cancelKind(c, e, ca.KindLink)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return writeJSON(e.stdout, enrollmentJSON(en, e.now()))
	}
	fmt.Fprintf(e.stdout, "cancelled enrollment link %s for %q\n", en.ID, en.Name)
	return nil
}

// cancelKind cancels the pending enrollment of kind that --cancel names
// (an ID or a name), under the CA lock. One of the other kind is refused,
// with the command that cancels it.
func cancelKind(c *cli.Context, e *env, kind ca.EnrollKind) (*ca.Enrollment, error) {
	if err := wantArgs(c, 0, 0); err != nil {
		return nil, err
	}
	w := kindOf(kind)
	ref := c.String("cancel")
	if ref == "" {
		return nil, usagef(c, "--cancel needs a NAME or %s %s's ID", w.article, w.noun)
	}
	authority, unlock, err := lockCA(c, e)
	if err != nil {
		return nil, err
	}
	defer unlock()
	en, err := authority.CancelEnrollment(kind, ref)
	var other *ca.EnrollKindError
	var spent *ca.EnrollmentSpentError
	switch {
	case errors.As(err, &other):
		return nil, withHint(err, "cancel it with minica %s --cancel %s", kindOf(other.Enrollment.Kind).command, ref)
	case errors.As(err, &spent):
		return nil, withHint(err, "only a pending %s can be cancelled; see minica %s --list --all", w.short, w.command)
	case errors.Is(err, ca.ErrEnrollmentUnknown):
		return nil, withHint(err, "see the pending %ss with minica %s --list", w.short, w.command)
	}
	return en, err
}

// kindWords is how a person is told of one kind of enrollment: what it is
// called, the command that makes, lists and cancels it, and who redeems it.
type kindWords struct{ article, noun, short, command, holder string }

// kindOf returns the words of kind.
func kindOf(kind ca.EnrollKind) kindWords {
	if kind == ca.KindToken {
		return kindWords{article: "a", noun: "bootstrap token", short: "token", command: "token", holder: "the machine"}
	}
	return kindWords{article: "an", noun: "enrollment link", short: "link", command: "enroll", holder: "the person"}
}

// secretOnTerminal refuses to print the secret of an enrollment of kind
// on a stdout that is not a terminal unless --json asks for it:
// redirected output ends up in logs and CI transcripts.
func secretOnTerminal(c *cli.Context, e *env, kind ca.EnrollKind) error {
	if c.Bool("json") || (e.stdoutTerminal != nil && e.stdoutTerminal()) {
		return nil
	}
	w := kindOf(kind)
	return withHint(usagef(c, "the %s is a secret, and stdout is not a terminal: it is printed only on a terminal, or as JSON", w.short),
		"pass --json to hand the %s to a script, or run minica %s on a terminal", w.short, w.command)
}

// pendingHint adds to err, when it is a *ca.EnrollmentPendingError, the
// command that cancels the pending enrollment, of whichever kind it is.
func pendingHint(name string, err error) error {
	var pending *ca.EnrollmentPendingError
	if !errors.As(err, &pending) {
		return err
	}
	w := kindOf(pending.Pending.Kind)
	return withHint(err, "cancel the %s first (minica %s --cancel %s), or let %s use it", w.noun, w.command, name, w.holder)
}

// setEnrollURL stores (--set-base-url) or removes (--clear-base-url) the
// CA's base of enrollment links, under the CA lock.
func setEnrollURL(c *cli.Context, e *env) error {
	if err := wantArgs(c, 0, 0); err != nil {
		return err
	}
	v := c.String("set-base-url")
	if c.IsSet("set-base-url") {
		if err := ca.ValidateEnrollURL(v); err != nil {
			return usagef(c, "--set-base-url: %v", err)
		}
	}
	authority, unlock, err := lockCA(c, e)
	if err != nil {
		return err
	}
	defer unlock()
	if err := authority.SetEnrollURL(v); err != nil {
		return err
	}
	if v == "" {
		fmt.Fprintln(e.stdout, "enrollment links now need --base-url")
	} else {
		fmt.Fprintf(e.stdout, "enrollment links will start with %s/enroll/\n", authority.Settings.EnrollURL)
	}
	return nil
}

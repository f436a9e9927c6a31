package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"minica/ca"
)

// flagsNotWithExpiring name one certificate, or change what a batch of
// renewals must not: each successor keeps its own identity and key rules.
var flagsNotWithExpiring = []string{"csr", "force", "revoke-old", "p12-out", "p12-password-file"}

// renewLine is the JSON line `renew --expiring --json` prints per
// certificate: renewed (or, with --dry-run, due).
type renewLine struct {
	Status string `json:"status"` // renewed, due, resumed
	issuedJSON
	RenewalOf string `json:"renewal_of"`
	P12       string `json:"p12,omitempty"`
}

// dueLine is what --dry-run prints per certificate.
type dueLine struct {
	Status   string     `json:"status"` // due
	Name     string     `json:"name"`
	Profile  ca.Profile `json:"profile"`
	Serial   string     `json:"serial"`
	NotAfter time.Time  `json:"not_after"`
}

func runRenewExpiring(c *cli.Context, e *env) error {
	if c.NArg() > 0 {
		return usagef(c, "with --expiring the certificates are the ones that expire: unexpected argument %q", c.Args().First())
	}
	for _, f := range flagsNotWithExpiring {
		if c.IsSet(f) {
			return usagef(c, "--%s cannot be combined with --expiring: renew that certificate on its own", f)
		}
	}
	within, err := ca.ParseDuration(c.String("expiring"))
	if err != nil {
		return usagef(c, "--expiring: %v", err)
	}
	opts := ca.RenewOptions{ReuseKey: c.Bool("reuse-key")}
	if opts.Validity, err = validityValue(c); err != nil {
		return err
	}
	if opts.KeyType, err = keyTypeValue(c); err != nil {
		return err
	}
	if opts.ReuseKey && opts.KeyType != "" {
		return usagef(c, "--key-type and --reuse-key: the old key decides the type")
	}
	b := &batchRun{c: c, e: e, json: c.Bool("json")}
	if err := b.p12Options(); err != nil {
		return err
	}
	if b.p12 && opts.ReuseKey {
		return usagef(c, "--p12 and --reuse-key: a certificate from sign has no key to bundle")
	}
	authority, unlock, err := lockCA(c, e)
	if err != nil {
		return err
	}
	defer unlock()
	b.ca = authority
	plan, err := authority.PlanRenewals(within, opts)
	if err != nil {
		return err
	}
	for _, rec := range plan.Resumed {
		fmt.Fprintf(e.stderr, "minica: note: %q (serial %s) was renewed by an interrupted earlier run: its successor %s is now linked to it\n", rec.Name, rec.RenewalOf, rec.Serial)
	}
	for _, rec := range plan.NoKey {
		fmt.Fprintf(e.stderr, "minica: note: skipped %q (serial %s, expires %s): it was signed from a CSR; renew it with 'minica renew %s --csr NEW.csr' (or --reuse-key)\n", rec.Name, rec.Serial, day(rec.NotAfter), rec.Serial)
	}
	if err := refuseRenewals(e, plan); err != nil {
		return err
	}
	if c.Bool("dry-run") {
		return printDue(c, e, authority, plan)
	}
	if len(plan.Due) == 0 {
		fmt.Fprintf(e.stderr, "minica: no certificate to renew: none is valid, without a successor, and expiring within %s\n", c.String("expiring"))
		return nil
	}
	if b.p12 && len(plan.Due) > 1 && b.pwPath == "" {
		return withHint(usagef(c, "--p12 with %d certificates to renew needs --p12-password-out FILE: their passwords are not shown on the terminal", len(plan.Due)),
			"add --p12-password-out passwords.csv (written 0600: name,file,password)")
	}
	if b.p12 {
		if err := checkBundles(c, b, authority, plan); err != nil {
			return err
		}
	}
	signer, err := loadSigner(c, e, authority)
	if err != nil {
		return err
	}
	if err := b.openPasswordFile(); err != nil {
		return err
	}
	defer b.closePasswordFile()
	b.startOutput(len(plan.Due))
	if b.bar != nil {
		b.bar.Describe("renewing certificates")
	}
	_, err = authority.RenewBatch(c.Context, signer, plan.Due, opts, ca.BatchOptions{GroupSize: e.batchGroup}, func(rn *ca.Renewed) error {
		return reportRenewed(b, rn)
	})
	if err == nil && c.Context.Err() != nil {
		err = fmt.Errorf("interrupted: %w", c.Context.Err())
	}
	if cerr := b.closePasswordFile(); err == nil {
		err = cerr
	}
	b.finishOutput()
	if err != nil {
		return withHint(fmt.Errorf("renewed %d of %d certificates, then: %w", b.issued, len(plan.Due), err),
			"the successors issued are valid, recorded and linked; run the same command again to renew the rest")
	}
	msg := fmt.Sprintf("renewed %d %s expiring within %s", b.issued, plural(b.issued, "certificate", "certificates"), c.String("expiring"))
	if b.pwPath != "" {
		msg += fmt.Sprintf("; bundle passwords in %s (mode 0600)", b.pwPath)
	}
	if b.json {
		fmt.Fprintf(e.stderr, "minica: %s\n", msg)
	} else {
		fmt.Fprintln(e.stdout, msg)
	}
	return nil
}

// refuseRenewals lists every due certificate that cannot be renewed, and
// fails the batch before anything is issued.
func refuseRenewals(e *env, plan *ca.RenewalPlan) error {
	if len(plan.Refused) == 0 {
		return nil
	}
	for _, err := range plan.Refused {
		fmt.Fprintf(e.stderr, "minica: %v\n", err)
	}
	err := fmt.Errorf("%d of %d due certificates cannot be renewed (listed above): nothing was renewed", len(plan.Refused), len(plan.Refused)+len(plan.Due))
	if errors.Is(plan.Refused[0], ca.ErrOutlivesCA) {
		return withHint(err, "pass a shorter --validity, or renew the CA first")
	}
	return err
}

// checkBundles refuses the batch when a successor's bundle file exists:
// a name's bundle from its first issuance is usually still there.
func checkBundles(c *cli.Context, b *batchRun, authority *ca.CA, plan *ca.RenewalPlan) error {
	var taken []string
	for _, serial := range plan.Due {
		rec, err := recordOf(authority, serial)
		if err != nil {
			return err
		}
		if _, err := os.Lstat(b.bundlePath(rec.Name)); err == nil {
			taken = append(taken, b.bundlePath(rec.Name))
		}
	}
	if len(taken) == 0 {
		return nil
	}
	list := strings.Join(taken[:min(len(taken), 5)], ", ")
	if len(taken) > 5 {
		list += fmt.Sprintf(" and %d more", len(taken)-5)
	}
	return withHint(fmt.Errorf("--p12: %d bundle files exist already (%s): nothing was renewed", len(taken), list),
		"write the new bundles elsewhere with --p12-dir DIR")
}

func recordOf(authority *ca.CA, serial string) (*ca.Record, error) {
	n, err := ca.ParseSerial(serial)
	if err != nil {
		return nil, err
	}
	return authority.Record(n)
}

func printDue(c *cli.Context, e *env, authority *ca.CA, plan *ca.RenewalPlan) error {
	for _, serial := range plan.Due {
		rec, err := recordOf(authority, serial)
		if err != nil {
			return err
		}
		if c.Bool("json") {
			err = writeJSON(e.stdout, dueLine{Status: "due", Name: rec.Name, Profile: rec.Profile, Serial: rec.Serial, NotAfter: rec.NotAfter})
		} else {
			_, err = fmt.Fprintf(e.stdout, "would renew %s %q (serial %s, expires %s)\n", rec.Profile, rec.Name, rec.Serial, day(rec.NotAfter))
		}
		if err != nil {
			return err
		}
	}
	fmt.Fprintf(e.stderr, "minica: %d %s due within %s; nothing was renewed (--dry-run)\n", len(plan.Due), plural(len(plan.Due), "certificate", "certificates"), c.String("expiring"))
	return nil
}

func reportRenewed(b *batchRun, rn *ca.Renewed) error {
	bundle, line, err := b.done(rn.Issued)
	if err != nil || !line {
		return err
	}
	r := rn.Record
	if b.json {
		return writeJSON(b.e.stdout, renewLine{Status: "renewed", issuedJSON: issuedOf(rn.Issued), RenewalOf: rn.Predecessor.Serial, P12: bundle})
	}
	_, err = fmt.Fprintf(b.e.stdout, "renewed %s %q (serial %s, renews %s): %s\n", r.Profile, r.Name, r.Serial, rn.Predecessor.Serial, sanText(r.SANs))
	return err
}

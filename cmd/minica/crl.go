package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"minica/ca"
	"minica/internal/atomicfile"
	"minica/revoke"
)

func crlCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "crl",
		Usage:     "publish a new CRL as crl.pem and crl.der in the CA directory",
		ArgsUsage: " ",
		Description: "Each CRL gets a number one higher than any before it. nextUpdate is the CA's\n" +
			"CRL lifetime (7 days unless set, 365 days for a root) or --next-update. --out writes extra copies,\n" +
			"replacing them atomically: PEM when FILE ends in .pem, DER otherwise (what HTTP\n" +
			"distribution points serve).\n\n" +
			"Example:\n   minica crl\n   minica crl --next-update 7d --out /var/www/ca.crl",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "next-update", Usage: "lifetime of this CRL, e.g. 7d or 36h (default: the CA's CRL lifetime)"},
			&cli.StringSliceFlag{Name: "out", Usage: "also write the CRL to `FILE` (repeatable)"},
			passwordFileFlag(),
			pinFileFlag(),
			jsonFlag(),
		},
		Subcommands: []*cli.Command{crlStatusCommand(e), crlURLCommand(e), crlDeltaCommand(e), crlFetchCommand(e), crlImportRootCommand(e)},
		Action:      func(c *cli.Context) error { return runCRL(c, e) },
	}
}

func runCRL(c *cli.Context, e *env) error {
	if err := wantArgs(c, 0, 0); err != nil {
		return err
	}
	var lifetime time.Duration
	if v := c.String("next-update"); v != "" {
		d, err := ca.ParseDuration(v)
		if err != nil {
			return usagef(c, "--next-update: %v", err)
		}
		lifetime = d
	}
	authority, unlock, err := lockCA(c, e)
	if err != nil {
		return err
	}
	defer unlock()
	if crl, err := authority.LoadCRL(); err == nil && dueOrExpired(crlFreshness(crl, e.now())) {
		warnf(e.stderr, "the previous CRL %s was past half its lifetime (next update %s); publish more often", crl.Number(), day(crl.NextUpdate()))
	}
	info, err := publishLocked(c, e, authority, lifetime)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		out := crlJSON(info.CRLInfo)
		if len(info.copies) > 0 {
			out["copies"] = info.copies
		}
		return writeJSON(e.stdout, out)
	}
	printPublished(e, info.CRLInfo)
	for _, cp := range info.copies {
		fmt.Fprintf(e.stdout, "  copy %s (%s), sha256 %s\n", cp.File, cp.Format, cp.SHA256)
	}
	return nil
}

// published is a CRL publication plus the --out copies written of it.
type published struct {
	*ca.CRLInfo
	copies []crlCopy
}

// crlCopy is one --out copy of a CRL.
type crlCopy struct {
	File   string `json:"file"`
	Format string `json:"format"` // PEM or DER
	// SHA256 is the hex SHA-256 of the file's bytes as written, what
	// sha256sum prints for it: a copy that travels (a root's CRL, from the
	// offline machine) is compared by it on both sides.
	SHA256 string `json:"sha256"`
}

// publishLocked loads the CA key and publishes a CRL, plus the --out copies.
// The caller holds the lock.
func publishLocked(c *cli.Context, e *env, authority *ca.CA, lifetime time.Duration) (*published, error) {
	signer, err := loadSigner(c, e, authority)
	if err != nil {
		return nil, err
	}
	info, err := authority.PublishCRL(signer, lifetime)
	if err != nil {
		return nil, err
	}
	p := &published{CRLInfo: info}
	if c.Command.Name == "crl" {
		for _, out := range c.StringSlice("out") {
			cp, err := writeCopy(out, info.DER)
			if err != nil {
				return nil, err
			}
			p.copies = append(p.copies, cp)
		}
	}
	return p, nil
}

// publishRevocationsLocked publishes the change of the records changed by
// ca.CA.PublishRevocations: a delta CRL when the CA signs them, else a
// complete CRL.
func publishRevocationsLocked(c *cli.Context, e *env, authority *ca.CA, changed []*ca.Record) (*published, error) {
	signer, err := loadSigner(c, e, authority)
	if err != nil {
		return nil, err
	}
	info, err := authority.PublishRevocations(signer, changed)
	if err != nil {
		return nil, err
	}
	return &published{CRLInfo: info}, nil
}

// writeCopy replaces file with the CRL (PEM for .pem, else DER), mode 0644,
// atomically and durably, and returns what it wrote with the bytes' SHA-256.
func writeCopy(file string, der []byte) (crlCopy, error) {
	data, format := der, "DER"
	if strings.EqualFold(filepath.Ext(file), ".pem") {
		data, format = pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: der}), "PEM"
	}
	if err := atomicfile.WriteFile(file, data, 0o644); err != nil {
		return crlCopy{}, fmt.Errorf("writing CRL copy %q: %w", file, err)
	}
	sum := sha256.Sum256(data)
	return crlCopy{File: file, Format: format, SHA256: hex.EncodeToString(sum[:])}, nil
}

func crlJSON(info *ca.CRLInfo) map[string]any {
	out := map[string]any{
		"number":      info.Number.String(),
		"this_update": info.ThisUpdate,
		"next_update": info.NextUpdate,
		"entries":     info.Entries,
		"pem":         info.PEMFile,
		"der":         info.DERFile,
	}
	if info.Delta {
		out["delta_base"] = info.Base.String()
	}
	return out
}

func printPublished(e *env, info *ca.CRLInfo) {
	if info.Delta {
		fmt.Fprintf(e.stdout, "published delta CRL %s (changes since CRL %s: %d), next update %s\n", info.Number, info.Base, info.Entries, day(info.NextUpdate))
	} else {
		fmt.Fprintf(e.stdout, "published CRL %s with %d revoked, next update %s\n", info.Number, info.Entries, day(info.NextUpdate))
	}
	fmt.Fprintf(e.stdout, "  pem  %s\n", info.PEMFile)
	fmt.Fprintf(e.stdout, "  der  %s\n", info.DERFile)
}

// crlFreshness is the state of crl at now by revoke.Freshness, with its
// default thresholds: due soon past half the lifetime, no grace.
func crlFreshness(crl *revoke.CRL, now time.Time) revoke.CRLState {
	return revoke.Freshness(crl.ThisUpdate(), crl.NextUpdate(), revoke.Thresholds{}, now)
}

// dueOrExpired reports whether a CRL in state st should have been replaced
// already: due soon or expired.
func dueOrExpired(st revoke.CRLState) bool {
	return st == revoke.DueSoon || st == revoke.Expired
}

// warnStaleCRL warns when the published CRL is past half its lifetime,
// missing, or lacks revocations, for commands that do not republish it.
func warnStaleCRL(e *env, authority *ca.CA) {
	crl, err := authority.LoadCRL()
	switch {
	case errors.Is(err, ca.ErrNoCRL):
		warnf(e.stderr, "the CA has no published CRL; run 'minica crl'")
		return
	case err != nil:
		warnf(e.stderr, "%v", err)
		return
	}
	switch crlFreshness(crl, e.now()) {
	case revoke.Expired:
		warnf(e.stderr, "the published CRL %s expired at %s; clients now refuse every certificate; run 'minica crl'", crl.Number(), day(crl.NextUpdate()))
	case revoke.DueSoon:
		warnf(e.stderr, "the published CRL %s is past half its lifetime (next update %s); run 'minica crl'", crl.Number(), day(crl.NextUpdate()))
	}
	missing, err := authority.Unpublished(crl)
	if err != nil {
		warnf(e.stderr, "%v", err)
	}
	if len(missing) > 0 {
		warnf(e.stderr, "%s not yet on the published CRL %s; servers still accept %s; run 'minica crl'",
			revocations(len(missing)), crl.Number(), map[bool]string{true: "that certificate", false: "those certificates"}[len(missing) == 1])
	}
}

// revocations says "1 revocation" or "N revocations".
func revocations(n int) string {
	if n == 1 {
		return "1 revocation"
	}
	return fmt.Sprintf("%d revocations", n)
}

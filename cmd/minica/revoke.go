package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"minica/ca"
	"minica/revoke"
)

func revokeCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "revoke",
		Usage:     "revoke a certificate by name, serial or file, or a person's by email or name prefix, and republish the CRL",
		ArgsUsage: "NAME|SERIAL|FILE | --email ADDRESS --all | --prefix PREFIX --all",
		Description: "Reasons are the RFC 5280 names, in any case: " + strings.Join(revoke.ReasonNames(), ", ") + ".\n" +
			"keyCompromise, cACompromise, aACompromise, affiliationChanged, cessationOfOperation\n" +
			"and privilegeWithdrawn also revoke every certificate renewed from it (by renew, serve\n" +
			"or the agent, directly or through another renewal), each named in the output; other\n" +
			"reasons name the certificates renewed from it that stay valid (see docs/security.md).\n" +
			"removeFromCRL only lifts a certificateHold. Revoking a revoked certificate again\n" +
			"changes nothing but the rest of its line and exits 0; it republishes the CRL when the published one does\n" +
			"not list it yet (an earlier revoke could not publish). A name with several\n" +
			"unrevoked certificates needs a serial, or --all. The CRL is republished in the\n" +
			"same locked step unless --no-crl.\n\n" +
			"Offboarding: --email ADDRESS --all revokes every certificate whose SANs hold the\n" +
			"address, compared in any case; --prefix PREFIX --all every certificate whose name\n" +
			"starts with PREFIX, exactly. Both revoke expired ones too, skip those already revoked\n" +
			"(noted on stderr), publish one CRL for the whole set, and fail, changing nothing,\n" +
			"when nothing is found. 'minica list' with the same flag shows the set first.\n" +
			"--email first cancels the person's pending enrollment links and bootstrap tokens\n" +
			"and ends their sign-in sessions, naming each (see docs/lifecycle.md).\n" +
			"A failure part-way names the certificates revoked before it; run the command again.\n\n" +
			"Output: one line per certificate revoked, a successor's naming the one it renews:\n" +
			"   revoked alice (serial 5f3c...) at 2030-01-04T00:00:00Z (keyCompromise)\n" +
			"   revoked alice (serial 9a1b...) at 2030-01-04T00:00:00Z (keyCompromise), renewed from serial 5f3c...\n" +
			"With --json, {\"certificates\":[...],\"crl\":{...}}: a successor revoked with its line has\n" +
			"renewal_of and revoked_with (the serial whose revocation took it); valid_successors lists\n" +
			"those a reason left valid. A line a crash cut short is completed by minica check, or by\n" +
			"revoking the certificate again (with the same reason, or any).\n\n" +
			"Example:\n   minica revoke simon --reason keyCompromise\n   minica revoke 5f:3c:9a:... --reason superseded\n" +
			"   minica revoke --email simon@example.com --all --reason affiliationChanged",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "reason", Value: "unspecified", Usage: "the RFC 5280 revocation reason"},
			&cli.BoolFlag{Name: "all", Usage: "revoke every unrevoked certificate of NAME, or of --email or --prefix"},
			&cli.BoolFlag{Name: "no-crl", Usage: "record the revocation without republishing the CRL"},
			passwordFileFlag(),
			pinFileFlag(),
			jsonFlag(),
		}, searchFlags("with --all, revoke")...),
		Action: func(c *cli.Context) error { return runRevoke(c, e) },
	}
}

type revokedJSON struct {
	Name      string    `json:"name"`
	Serial    string    `json:"serial"`
	RevokedAt time.Time `json:"revoked_at,omitzero"`
	Reason    string    `json:"reason,omitempty"`
	Already   bool      `json:"already_revoked"`
	Lifted    bool      `json:"hold_lifted"`
	// Unpublished: already revoked, but the published CRL did not list it.
	Unpublished bool `json:"was_unpublished,omitempty"`
	// RenewalOf and RevokedWith, on a successor revoked with its line:
	// the certificate it renews, and the one whose revocation took it.
	RenewalOf   string `json:"renewal_of,omitempty"`
	RevokedWith string `json:"revoked_with,omitempty"`
	// ValidSuccessors: the certificates renewed from this one that stay
	// valid, the reason not revoking the line.
	ValidSuccessors []successorJSON `json:"valid_successors,omitempty"`
}

type successorJSON struct {
	Name      string `json:"name"`
	Serial    string `json:"serial"`
	RenewalOf string `json:"renewal_of"`
}

func runRevoke(c *cli.Context, e *env) error {
	search, err := parseRevokeSearch(c)
	if err != nil {
		return err
	}
	reason, err := revoke.ParseReason(c.String("reason"))
	if err != nil {
		return usagef(c, "--reason: %v", err)
	}
	if search != nil && reason == revoke.RemoveFromCRL {
		return withHint(usagef(c, "--reason removeFromCRL cannot be combined with %s: holds are lifted by name or serial", search.flag),
			"list them with 'minica list %s --status revoked', then lift each with 'minica revoke NAME --all --reason removeFromCRL'", search)
	}
	authority, unlock, err := lockCA(c, e)
	if err != nil {
		return err
	}
	defer unlock()
	var targets []*ca.Record
	var off *ca.Offboarded
	if search != nil {
		off, err = offboardEmail(c, e, authority, search)
		if err == nil {
			targets, err = searchTargets(e, authority, search)
		}
		if err != nil && off.Did() {
			err = fmt.Errorf("%w (the links and sessions above were ended)", err)
		}
	} else {
		targets, err = revokeTargets(c, authority, c.Args().First(), reason)
	}
	if err != nil {
		return err
	}
	results, changed, err := revokeEach(c, e, authority, targets, reason)
	if err != nil {
		return revokedBeforeFailure(c, e, results, err)
	}
	var info *published
	if len(changed) > 0 && !c.Bool("no-crl") {
		if info, err = publishRevocationsLocked(c, e, authority, changed); err != nil {
			return fmt.Errorf("the revocation is recorded, but publishing the CRL failed (run this command again, or minica crl): %w", err)
		}
	} else {
		warnStaleCRL(e, authority)
	}
	if c.Bool("json") {
		out := map[string]any{"certificates": results}
		if off != nil {
			out["cancelled_enrollments"], out["sessions_ended"] = cancelledList(off), off.Sessions
		}
		if info != nil {
			out["crl"] = crlJSON(info.CRLInfo)
		}
		return writeJSON(e.stdout, out)
	}
	if info != nil {
		printPublished(e, info.CRLInfo)
	}
	return nil
}

// offboardEmail, for a revocation by --email, cancels the person's
// pending enrollment links and tokens and ends their sign-in sessions
// (ca.CA.OffboardEmail) before their certificates are found, saying so
// for each; for --prefix it does nothing and returns nil.
func offboardEmail(c *cli.Context, e *env, authority *ca.CA, search *recordSearch) (*ca.Offboarded, error) {
	if search.flag != "--email" {
		return nil, nil
	}
	off, err := authority.OffboardEmail(search.value)
	if off == nil {
		return nil, err
	}
	out := e.stdout
	if c.Bool("json") {
		out = e.stderr
	}
	for _, l := range off.Cancelled {
		fmt.Fprintf(out, "cancelled %s %s for %q\n", strings.TrimPrefix(strings.TrimPrefix(l.Kind.String(), "a "), "an "), l.ID, l.Name)
	}
	if off.Sessions > 0 {
		fmt.Fprintf(out, "ended %d sign-in %s of %s\n", off.Sessions, plural(off.Sessions, "session", "sessions"), search.value)
	}
	return off, err
}

type cancelledJSON struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	Name string `json:"name"`
}

func cancelledList(off *ca.Offboarded) []cancelledJSON {
	out := []cancelledJSON{}
	for _, l := range off.Cancelled {
		kind := "link"
		if l.Kind == ca.KindToken {
			kind = "token"
		}
		out = append(out, cancelledJSON{ID: l.ID, Kind: kind, Name: l.Name})
	}
	return out
}

// revokeEach revokes targets in order with reason, saying so for each as
// it is done, and returns what it did, as far as it got on an error, and
// the records whose change a CRL should publish.
func revokeEach(c *cli.Context, e *env, authority *ca.CA, targets []*ca.Record, reason revoke.Reason) ([]revokedJSON, []*ca.Record, error) {
	var results []revokedJSON
	var changed []*ca.Record
	inLine := map[string]bool{} // successors revoked with an earlier target
	later := map[string]bool{}  // targets not revoked yet
	for _, r := range targets {
		later[r.Serial] = true
	}
	for _, r := range targets {
		delete(later, r.Serial)
		if inLine[r.Serial] {
			continue
		}
		res, err := authority.RevokeRecord(r, reason)
		if errors.Is(err, ca.ErrNotOnHold) {
			return results, changed, withHint(err, "removeFromCRL is for certificates revoked with --reason certificateHold")
		}
		if err != nil {
			return results, changed, err
		}
		changed = append(changed, res.ChangedRecords()...)
		for _, n := range res.Finished {
			fmt.Fprintf(e.stderr, "minica: note: %s\n", n)
		}
		rec := res.Record
		results = append(results, revokedJSON{Name: rec.Name, Serial: rec.Serial, RevokedAt: rec.RevokedAt,
			Reason: rec.Reason, Already: res.Already, Lifted: res.Lifted, Unpublished: res.Unpublished})
		switch {
		case res.Already && res.Unpublished:
			fmt.Fprintf(e.stderr, "minica: %s (serial %s) was already revoked at %s (%s), but the published CRL does not list it yet\n", rec.Name, rec.Serial, day(rec.RevokedAt), rec.Reason)
		case res.Already:
			fmt.Fprintf(e.stderr, "minica: %s (serial %s) was already revoked at %s (%s)\n", rec.Name, rec.Serial, day(rec.RevokedAt), rec.Reason)
		case res.Lifted && !c.Bool("json"):
			fmt.Fprintf(e.stdout, "lifted the hold on %s (serial %s)\n", rec.Name, rec.Serial)
		case !c.Bool("json"):
			fmt.Fprintf(e.stdout, "revoked %s (serial %s) at %s (%s)\n", rec.Name, rec.Serial, day(rec.RevokedAt), rec.Reason)
		}
		for _, s := range res.Successors {
			inLine[s.Serial] = true
			results = append(results, revokedJSON{Name: s.Name, Serial: s.Serial, RevokedAt: s.RevokedAt, Reason: s.Reason,
				RenewalOf: s.RenewalOf, RevokedWith: rec.Serial})
			if !c.Bool("json") {
				fmt.Fprintf(e.stdout, "revoked %s (serial %s) at %s (%s), renewed from serial %s\n", s.Name, s.Serial, day(s.RevokedAt), s.Reason, s.RenewalOf)
			}
		}
		// A successor that this command revokes next is no warning.
		stillValid := slices.DeleteFunc(res.StillValid, func(s *ca.Record) bool { return later[s.Serial] })
		results[len(results)-len(res.Successors)-1].ValidSuccessors = warnValidSuccessors(e, rec, stillValid)
	}
	return results, changed, nil
}

// revokedBeforeFailure is err, from revoking a target, naming the
// certificates revoked (or lifted) before it, which stay so (each
// revocation is durable on its own) but are not on the published CRL
// yet; with --json, it prints them too.
func revokedBeforeFailure(c *cli.Context, e *env, results []revokedJSON, err error) error {
	var done []string
	verb := "revoked"
	for _, r := range results {
		switch {
		case r.Lifted:
			done = append(done, fmt.Sprintf("%s (serial %s, hold lifted)", r.Name, r.Serial))
			verb = "changed"
		case !r.Already:
			done = append(done, fmt.Sprintf("%s (serial %s)", r.Name, r.Serial))
		}
	}
	if len(done) == 0 {
		return err
	}
	if c.Bool("json") {
		if jerr := writeJSON(e.stdout, map[string]any{"certificates": results}); jerr != nil {
			return errors.Join(err, jerr)
		}
	}
	return withHint(fmt.Errorf("%w; before the failure, %d %s %s (not yet on the published CRL): %s",
		err, len(done), plural(len(done), "certificate was", "certificates were"), verb, strings.Join(done, ", ")),
		"run this command again: it skips what is done, revokes the rest and publishes the CRL ('minica check' settles a revocation cut short)")
}

// parseRevokeSearch returns the search of --email or --prefix, checked
// against the rest of the command line, or nil for a revocation by NAME.
func parseRevokeSearch(c *cli.Context) (*recordSearch, error) {
	search, err := parseSearch(c)
	if err != nil {
		return nil, err
	}
	if search == nil {
		return nil, wantArgs(c, 1, 1)
	}
	if c.NArg() > 0 {
		return nil, usagef(c, "%s cannot be combined with a NAME, SERIAL or FILE (%q): name the certificates one way", search.flag, c.Args().First())
	}
	if !c.Bool("all") {
		return nil, withHint(usagef(c, "%s needs --all: it revokes every certificate found", search.flag),
			"see them first with 'minica list %s'", search)
	}
	return search, nil
}

// searchTargets returns the certificates search finds, after settling
// the CA's interrupted issuances (see ca.CA.SettledRecords), saying what
// that did; finding none is an error.
func searchTargets(e *env, authority *ca.CA, search *recordSearch) ([]*ca.Record, error) {
	recs, finished, err := authority.SettledRecords(func() ([]*ca.Record, error) { return search.find(authority) })
	for _, n := range finished {
		fmt.Fprintf(e.stderr, "minica: note: %s\n", n)
	}
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, withHint(fmt.Errorf("no certificate %s; nothing was revoked", search.what()),
			"list the CA's certificates with 'minica list'")
	}
	return recs, nil
}

// revokeTargets resolves what the user named to the records to revoke (see
// ca.Target.Revocable; ca.Target.Liftable for removeFromCRL), with what to
// do when that fails.
func revokeTargets(c *cli.Context, authority *ca.CA, arg string, reason revoke.Reason) ([]*ca.Record, error) {
	t, err := authority.Resolve(arg)
	var nf *ca.NotFoundError
	if errors.As(err, &nf) && nf.Kind == ca.TargetSerial {
		return nil, withHint(fmt.Errorf("unknown serial %s: this CA never issued it; nothing was changed", arg),
			"list the CA's certificates with 'minica list'")
	}
	if err != nil {
		return nil, unknownNameHint(authority, err)
	}
	revocable := t.Revocable
	if reason == revoke.RemoveFromCRL {
		revocable = t.Liftable
	}
	recs, err := revocable(c.Bool("all"))
	var amb *ca.AmbiguousError
	if errors.As(err, &amb) && amb.OnHold {
		return nil, withHint(err, "name one by its serial, or pass --all to lift every hold")
	}
	if errors.Is(err, ca.ErrAmbiguous) {
		return nil, withHint(err, "name one by its serial, or pass --all to revoke them all")
	}
	return recs, err
}

// warnValidSuccessors names, on stderr, the certificates renewed from rec
// that its revocation left valid (the reason does not revoke the line,
// see ca.RevokesLine): a note for superseded, where that is the point,
// a warning for the others. It returns them for --json.
func warnValidSuccessors(e *env, rec *ca.Record, valid []*ca.Record) []successorJSON {
	var out []successorJSON
	for _, s := range valid {
		out = append(out, successorJSON{Name: s.Name, Serial: s.Serial, RenewalOf: s.RenewalOf})
		if rec.Reason == revoke.Superseded.String() {
			fmt.Fprintf(e.stderr, "minica: note: %s (serial %s), renewed from serial %s, stays valid: superseded revokes only the certificate it names\n", s.Name, s.Serial, s.RenewalOf)
			continue
		}
		warnf(e.stderr, "%s (serial %s), renewed from serial %s, is still valid: %s revokes only the certificate it names; if its holder must lose access, revoke %s again with --reason keyCompromise (or another reason that revokes the certificates renewed from it)",
			s.Name, s.Serial, s.RenewalOf, rec.Reason, rec.Serial)
	}
	return out
}

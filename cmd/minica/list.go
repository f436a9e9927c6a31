package main

import (
	"bufio"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"minica/ca"
)

func listCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "list",
		Usage:     "list the certificates the CA has issued",
		ArgsUsage: " ",
		Description: "Streams the issuance database; --json prints JSON Lines, one record a line.\n" +
			"--email and --prefix list what 'minica revoke' with the same flag and --all acts on\n" +
			"(oldest first, void serials left out).\n\n" +
			"Example:\n   minica list --status valid --expiring 30d --json\n   minica list --email simon@example.com",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "status", Usage: "only valid, revoked, expired, pending or void certificates"},
			&cli.StringFlag{Name: "expiring", Usage: "only valid certificates that expire within `DURATION`, e.g. 30d"},
			&cli.StringFlag{Name: "profile", Usage: "only server or client certificates"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON Lines"},
		}, searchFlags("only")...),
		Action: func(c *cli.Context) error { return runList(c, e) },
	}
}

// listFilter selects records.
type listFilter struct {
	search   *recordSearch // nil: every record
	status   ca.Status
	profile  ca.Profile
	expiring time.Duration
	// expiringArg is --expiring as given, for messages.
	expiringArg string
	now         time.Time
}

// String is the filters as flags, such as "--status valid --expiring 30d",
// or "" when there are none.
func (f *listFilter) String() string {
	var flags []string
	if f.search != nil {
		flags = append(flags, f.search.String())
	}
	if f.status != "" {
		flags = append(flags, "--status "+string(f.status))
	}
	if f.expiring > 0 {
		flags = append(flags, "--expiring "+f.expiringArg)
	}
	if f.profile != "" {
		flags = append(flags, "--profile "+string(f.profile))
	}
	return strings.Join(flags, " ")
}

func (f *listFilter) match(r *ca.Record) bool {
	st := r.StatusAt(f.now)
	switch {
	case f.status != "" && st != f.status,
		f.profile != "" && r.Profile != f.profile,
		f.expiring > 0 && (st != ca.StatusValid || r.NotAfter.After(f.now.Add(f.expiring))):
		return false
	}
	return true
}

func parseListFilter(c *cli.Context, now time.Time) (*listFilter, error) {
	search, err := parseSearch(c)
	if err != nil {
		return nil, err
	}
	f := &listFilter{search: search, now: now}
	if s := c.String("status"); s != "" {
		switch st := ca.Status(s); st {
		case ca.StatusValid, ca.StatusRevoked, ca.StatusExpired, ca.StatusPending, ca.StatusVoid:
			f.status = st
		default:
			return nil, usagef(c, "--status %q: want valid, revoked, expired, pending or void", s)
		}
	}
	if s := c.String("profile"); s != "" {
		p, err := ca.ParseProfile(s)
		if err != nil {
			return nil, usagef(c, "--profile: %v", err)
		}
		f.profile = p
	}
	if s := c.String("expiring"); s != "" {
		d, err := ca.ParseDuration(s)
		if err != nil {
			return nil, usagef(c, "--expiring: %v", err)
		}
		f.expiring, f.expiringArg = d, s
	}
	return f, nil
}

func runList(c *cli.Context, e *env) error {
	if err := wantArgs(c, 0, 0); err != nil {
		return err
	}
	f, err := parseListFilter(c, e.now())
	if err != nil {
		return err
	}
	authority, err := openCA(c, e)
	if err != nil {
		return err
	}
	defer authority.Close()
	warnStaleCRL(e, authority) // crl.go
	w := bufio.NewWriter(e.stdout)
	defer w.Flush()
	n := 0
	for r, err := range f.records(authority) {
		if err != nil {
			return err
		}
		if !f.match(r) {
			continue
		}
		if err := printListed(w, c.Bool("json"), r, f.now); err != nil {
			return err
		}
		// The first line goes out at once, so that a long listing shows
		// progress; the rest is buffered.
		if n++; n == 1 {
			w.Flush()
		}
	}
	if n == 0 && !c.Bool("json") {
		if filters := f.String(); filters != "" {
			fmt.Fprintf(e.stderr, "minica: no certificate matches %s\n", filters)
		} else {
			fmt.Fprintln(e.stderr, "minica: the CA has issued no certificates yet")
		}
	}
	return nil
}

// records are the records to filter: the search's, oldest first, or
// every record, streamed in serial order.
func (f *listFilter) records(authority *ca.CA) iter.Seq2[*ca.Record, error] {
	if f.search == nil {
		return authority.Records()
	}
	return func(yield func(*ca.Record, error) bool) {
		recs, err := f.search.find(authority)
		if err != nil {
			yield(nil, err)
			return
		}
		for _, r := range recs {
			if !yield(r, nil) {
				return
			}
		}
	}
}

func printListed(w *bufio.Writer, asJSON bool, r *ca.Record, now time.Time) error {
	if asJSON {
		return writeJSON(w, recordJSON(r, now))
	}
	_, err := fmt.Fprintf(w, "%s  %-8s %-7s %-20s %s\n", r.Serial, r.StatusAt(now), r.Profile, day(r.NotAfter), r.Name)
	return err
}

// recordJSON returns a copy of r whose status is the one at now, so that
// "expired" shows in JSON output.
func recordJSON(r *ca.Record, now time.Time) ca.Record {
	out := *r
	out.Status = r.StatusAt(now)
	return out
}

package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"minica/ca"
	"minica/revoke"
)

func reportCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "summarize the CA: counts by status and profile, what expires soon, recent renewals and revocations, the CRL",
		ArgsUsage: " ",
		Description: "Reads the issuance database once, in memory that does not grow with it.\n" +
			"Expiry windows are 7, 30 and 90 days and count valid certificates; recent\n" +
			"means the last 30 days. Each list shows at most --limit certificates (the\n" +
			"soonest to expire, the newest renewals and revocations); the counts are\n" +
			"always complete. The CRL's state is the one 'minica crl status' reports.\n\n" +
			"Example:\n   minica report\n   minica report --json | jq .expiring",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "limit", Value: ca.DefaultReportLimit, Usage: "list at most `N` certificates per section"},
			jsonFlag(),
		},
		Action: func(c *cli.Context) error { return runReport(c, e) },
	}
}

// reportCRL is the CRL part of a report.
type reportCRL struct {
	State       string    `json:"state"` // fresh, due-soon, expired, not-yet-valid, unpublished, missing, unreadable
	Number      string    `json:"number,omitempty"`
	Entries     int       `json:"entries"`
	ThisUpdate  time.Time `json:"this_update,omitzero"`
	NextUpdate  time.Time `json:"next_update,omitzero"`
	Unpublished int       `json:"unpublished"`
	Error       string    `json:"error,omitempty"`
}

type reportList struct {
	Count        int              `json:"count"`
	Certificates []ca.ReportEntry `json:"certificates"`
}

type reportJSON struct {
	At          time.Time                        `json:"at"`
	Records     int                              `json:"records"`
	Status      map[ca.Status]int                `json:"status"`
	Profiles    map[ca.Profile]map[ca.Status]int `json:"profiles"`
	Expiring    map[string]int                   `json:"expiring"`
	NotRenewed  map[string]int                   `json:"expiring_not_renewed"`
	Soonest     []ca.ReportEntry                 `json:"soonest"`
	Renewals    reportList                       `json:"renewals_30d"`
	Revocations reportList                       `json:"revocations_30d"`
	CRL         reportCRL                        `json:"crl"`
}

func runReport(c *cli.Context, e *env) error {
	if err := wantArgs(c, 0, 0); err != nil {
		return err
	}
	limit := c.Int("limit")
	if limit < 1 {
		return usagef(c, "--limit %d: want at least 1", limit)
	}
	authority, err := openCA(c, e)
	if err != nil {
		return err
	}
	defer authority.Close()
	rep, err := authority.Report(limit)
	if err != nil {
		return err
	}
	crl := crlReport(authority, rep.At)
	if c.Bool("json") {
		return writeJSON(e.stdout, reportAsJSON(rep, crl))
	}
	w := bufio.NewWriter(e.stdout)
	printReport(w, rep, crl)
	return w.Flush()
}

// crlReport is the published CRL's state as 'crl status' judges it
// (ca.CA.CRLStatus); without the revocations, its freshness alone.
func crlReport(authority *ca.CA, now time.Time) reportCRL {
	crl, err := authority.LoadCRL()
	switch {
	case errors.Is(err, ca.ErrNoCRL):
		return reportCRL{State: "missing"}
	case err != nil:
		return reportCRL{State: "unreadable", Error: err.Error()}
	}
	out := reportCRL{State: string(crlFreshness(crl, now)), Number: crl.Number().String(), Entries: crl.Len(),
		ThisUpdate: crl.ThisUpdate(), NextUpdate: crl.NextUpdate()}
	st, err := authority.CRLStatus(crl, revoke.Thresholds{})
	if err != nil {
		out.Error = err.Error()
		return out
	}
	out.State, out.Unpublished = crlStateWord(st), len(st.Unpublished)
	return out
}

func windowKey(days int) string { return fmt.Sprintf("%dd", days) }

func reportAsJSON(rep *ca.Report, crl reportCRL) reportJSON {
	out := reportJSON{At: rep.At, Records: rep.Records, Status: rep.Status, Profiles: rep.Profiles,
		Expiring: map[string]int{}, NotRenewed: map[string]int{}, Soonest: nonNilEntries(rep.Soonest),
		Renewals:    reportList{Count: rep.RenewalCount, Certificates: nonNilEntries(rep.Renewals)},
		Revocations: reportList{Count: rep.RevocationCount, Certificates: nonNilEntries(rep.Revocations)},
		CRL:         crl}
	for i, days := range ca.ReportWindows {
		out.Expiring[windowKey(days)] = rep.Expiring[i]
		out.NotRenewed[windowKey(days)] = rep.NotRenewed[i]
	}
	for _, st := range reportStatuses {
		if _, ok := out.Status[st]; !ok {
			out.Status[st] = 0
		}
	}
	return out
}

func nonNilEntries(e []ca.ReportEntry) []ca.ReportEntry {
	if e == nil {
		return []ca.ReportEntry{}
	}
	return e
}

var reportStatuses = []ca.Status{ca.StatusValid, ca.StatusExpired, ca.StatusRevoked, ca.StatusPending, ca.StatusVoid}

func printReport(w io.Writer, rep *ca.Report, crl reportCRL) {
	counts := func(m map[ca.Status]int) string {
		var parts []string
		for _, st := range reportStatuses {
			if n := m[st]; n > 0 || st == ca.StatusValid {
				parts = append(parts, fmt.Sprintf("%d %s", n, st))
			}
		}
		return strings.Join(parts, ", ")
	}
	fmt.Fprintf(w, "report at %s: %d records\n", day(rep.At), rep.Records)
	fmt.Fprintf(w, "  status       %s\n", counts(rep.Status))
	for _, p := range []ca.Profile{ca.Server, ca.Client, ca.OCSP} {
		if m, ok := rep.Profiles[p]; ok {
			fmt.Fprintf(w, "  %-12s %s\n", p, counts(m))
		}
	}

	var windows []string
	for i, days := range ca.ReportWindows {
		windows = append(windows, fmt.Sprintf("%d within %dd (%d not renewed)", rep.Expiring[i], days, rep.NotRenewed[i]))
	}
	fmt.Fprintf(w, "\nexpiring: %s\n", strings.Join(windows, ", "))
	for _, en := range rep.Soonest {
		note := "not renewed"
		if en.RenewedBy != "" {
			note = "renewed by " + en.RenewedBy
		}
		fmt.Fprintf(w, "  %s  %-8s %-7s %s  (serial %s, %s)\n", day(en.NotAfter), daysIn(en.NotAfter, rep.At), en.Profile, en.Name, en.Serial, note)
	}
	printMore(w, rep.Expiring[len(rep.Expiring)-1], len(rep.Soonest), fmt.Sprintf("minica list --expiring %dd", ca.ReportWindows[len(ca.ReportWindows)-1]))

	fmt.Fprintf(w, "\nrenewed in the last 30 days: %d\n", rep.RenewalCount)
	for _, en := range rep.Renewals {
		fmt.Fprintf(w, "  %s  %-7s %s  (serial %s, renews %s)\n", day(en.IssuedAt), en.Profile, en.Name, en.Serial, en.RenewalOf)
	}
	printMore(w, rep.RenewalCount, len(rep.Renewals), "")

	fmt.Fprintf(w, "\nrevoked in the last 30 days: %d\n", rep.RevocationCount)
	for _, en := range rep.Revocations {
		fmt.Fprintf(w, "  %s  %-7s %s  (serial %s, %s)\n", day(en.RevokedAt), en.Profile, en.Name, en.Serial, en.Reason)
	}
	printMore(w, rep.RevocationCount, len(rep.Revocations), "minica list --status revoked")

	fmt.Fprintf(w, "\ncrl: ")
	switch crl.State {
	case "missing":
		fmt.Fprintln(w, "none published (run 'minica crl')")
	case "unreadable":
		fmt.Fprintf(w, "unreadable: %s\n", crl.Error)
	default:
		var lacks string
		if crl.Unpublished > 0 {
			lacks = fmt.Sprintf("; %s not yet on it (run 'minica crl')", revocations(crl.Unpublished))
		}
		if crl.Error != "" {
			lacks += "; " + crl.Error
		}
		fmt.Fprintf(w, "%s: CRL %s (%d revoked), next update %s (%s)%s\n", crl.State, crl.Number, crl.Entries, day(crl.NextUpdate), timeLeft(crl.NextUpdate.Sub(rep.At)), lacks)
	}
}

func printMore(w io.Writer, total, shown int, cmd string) {
	if total <= shown {
		return
	}
	if cmd != "" {
		fmt.Fprintf(w, "  and %d more (see '%s', or raise --limit)\n", total-shown, cmd)
		return
	}
	fmt.Fprintf(w, "  and %d more (raise --limit)\n", total-shown)
}

// daysIn says how long until t, in days and hours, as "in 3d 4h".
func daysIn(t, now time.Time) string {
	d := t.Sub(now).Truncate(time.Hour)
	return fmt.Sprintf("%dd %dh", int(d/(24*time.Hour)), int(d/time.Hour)%24)
}

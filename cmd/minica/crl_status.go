package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"minica/ca"
	"minica/revoke"
)

// Exit statuses of `crl status`, for cron jobs and monitoring.
const (
	crlFresh       = 0
	crlDueSoon     = 1
	crlExpired     = 2
	crlUnpublished = 3 // the revocation log holds revocations the CRL lacks
)

// crlExitCodes are the exit statuses of the verdicts of `crl status`.
var crlExitCodes = map[ca.CRLVerdict]int{
	ca.CRLFresh: crlFresh, ca.CRLDueSoon: crlDueSoon, ca.CRLExpired: crlExpired, ca.CRLUnpublished: crlUnpublished,
}

func crlStatusCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "tell whether the published CRL is fresh, due soon, expired or lacks revocations",
		ArgsUsage: " ",
		Description: "Exit status: 0 fresh, 1 due soon (nextUpdate within --warn), 2 expired, not yet\n" +
			"valid, missing or unreadable, 3 unpublished: certificates were revoked that the\n" +
			"CRL does not list yet (a revoke could not publish; run minica crl). --warn\n" +
			"defaults to half the CRL's lifetime. On an intermediate CA the root's CRL\n" +
			"that it keeps is judged too (JSON: \"root\"), and the worse of the two decides;\n" +
			"renew it with 'minica crl import-root FILE'.\n\n" +
			"Example:\n   minica crl status --warn 48h || mail -s 'CRL' ops@example.com",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "warn", Usage: "report due soon when nextUpdate is closer than this, e.g. 48h"},
			jsonFlag(),
		},
		Action: func(c *cli.Context) error { return runCRLStatus(c, e) },
	}
}

func runCRLStatus(c *cli.Context, e *env) error {
	if err := wantArgs(c, 0, 0); err != nil {
		return err
	}
	var warn time.Duration
	if v := c.String("warn"); v != "" {
		d, err := ca.ParseDuration(v)
		if err != nil {
			return usagef(c, "--warn: %v", err)
		}
		warn = d
	}
	authority, err := openCA(c, e)
	if err != nil {
		return err
	}
	defer authority.Close()
	crl, err := authority.LoadCRL()
	if errors.Is(err, ca.ErrNoCRL) {
		return &exitError{code: crlExpired, err: withHint(err, "publish one with 'minica crl'")}
	}
	if err != nil {
		return &exitError{code: crlExpired, err: withHint(err, "republish it with 'minica crl'")}
	}
	st, err := authority.CRLStatus(crl, revoke.Thresholds{DueSoon: warn})
	if err != nil {
		return &exitError{code: crlUnpublished, err: withHint(err, "run 'minica check'")}
	}
	now := e.now()
	left := crl.NextUpdate().Sub(now)
	missing, state := st.Unpublished, crlStateWord(st)
	var root *rootCRLState
	if st.Root != nil {
		root = rootCRLJSON(st.Root, now)
	}
	if c.Bool("json") {
		out := map[string]any{
			"state": state, "number": crl.Number().String(), "entries": crl.Len(),
			"this_update": crl.ThisUpdate(), "next_update": crl.NextUpdate(),
			"seconds_left": int64(left / time.Second), "unpublished": len(missing),
		}
		if root != nil {
			out["root"] = root
		}
		if err := writeJSON(e.stdout, out); err != nil {
			return err
		}
	} else {
		var lacks string
		if len(missing) > 0 {
			lacks = fmt.Sprintf("; %s not yet on the CRL", revocations(len(missing)))
		}
		fmt.Fprintf(e.stdout, "%s: CRL %s (%d revoked), next update %s (%s)%s\n", state, crl.Number(), crl.Len(), day(crl.NextUpdate()), timeLeft(left), lacks)
		if root != nil && root.Error != "" {
			fmt.Fprintf(e.stdout, "root %s: %s\n", root.State, root.Error)
		} else if root != nil {
			fmt.Fprintf(e.stdout, "root %s: CRL %s (%d revoked), next update %s (%s)\n", root.State, root.Number, root.Entries, day(root.NextUpdate), timeLeft(time.Duration(root.SecondsLeft)*time.Second))
		}
	}
	if st.Root != nil && st.Root.Verdict != ca.CRLFresh {
		warnf(e.stderr, "the root's CRL is %s: have the root sign a new one ('minica --dir ROOTDIR crl --out FILE') and import it here with 'minica crl import-root FILE'", root.State)
	}
	if st.Freshness == revoke.Expired {
		hintf(e.stderr, "%s", crlExpiredHint(crl.NextUpdate()))
	}
	if code := crlExitCodes[st.Verdict]; code != crlFresh {
		return &exitError{code: code}
	}
	return nil
}

// crlStateWord names the state of the CA's own CRL: its freshness, or
// unpublished when that decides its verdict.
func crlStateWord(st *ca.CRLStatus) string {
	if st.Own == ca.CRLUnpublished {
		return "unpublished"
	}
	return string(st.Freshness)
}

// rootCRLState is the state of the root CRL an intermediate keeps, as
// crl status prints it.
type rootCRLState struct {
	State       string    `json:"state"`
	Number      string    `json:"number,omitempty"`
	Entries     int       `json:"entries"`
	ThisUpdate  time.Time `json:"this_update,omitzero"`
	NextUpdate  time.Time `json:"next_update,omitzero"`
	SecondsLeft int64     `json:"seconds_left"`
	Error       string    `json:"error,omitempty"`
}

func rootCRLJSON(r *ca.RootCRLStatus, now time.Time) *rootCRLState {
	if r.CRL == nil {
		return &rootCRLState{State: "missing", Error: r.Err.Error()}
	}
	return &rootCRLState{State: string(r.Freshness), Number: r.CRL.Number().String(), Entries: r.CRL.Len(),
		ThisUpdate: r.CRL.ThisUpdate(), NextUpdate: r.CRL.NextUpdate(), SecondsLeft: int64(r.CRL.NextUpdate().Sub(now) / time.Second)}
}

// timeLeft says how long until (or since) a deadline, to the minute, such
// as "in 6d 23h 59m" or "2h 0m ago", or to the second under a minute, such
// as "in 42s".
func timeLeft(d time.Duration) string {
	ago := d < 0
	if ago {
		d = -d
	}
	var s string
	if d < time.Minute {
		s = fmt.Sprintf("%ds", int(d/time.Second))
	} else {
		d = d.Truncate(time.Minute)
		s = fmt.Sprintf("%dh %dm", int(d/time.Hour)%24, int(d/time.Minute)%60)
		if days := int(d / (24 * time.Hour)); days > 0 {
			s = fmt.Sprintf("%dd %s", days, s)
		}
	}
	if ago {
		return s + " ago"
	}
	return "in " + s
}

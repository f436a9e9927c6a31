package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"minica/ca"
)

// reloadCommands is how each server is told to read the new CRL, from cron
// (a shell) and from systemd.
var reloadCommands = map[string]struct{ shell, unit string }{
	"nginx":   {"nginx -s reload", "nginx"},
	"apache":  {"apachectl graceful", "apache2"},
	"haproxy": {"systemctl reload haproxy", "haproxy"},
	"proxy":   {"systemctl reload minica-proxy", "minica-proxy"},
}

// schedule is how often the CRL job runs.
type schedule struct {
	every    time.Duration
	label    string // every, for humans
	cron     string // the five time fields of a crontab line
	calendar string // systemd OnCalendar=
}

// schedules are the intervals a job may use, longest first; each divides a
// day evenly so that cron and systemd can say it.
var schedules = []schedule{
	{24 * time.Hour, "1d", "17 3 * * *", "*-*-* 03:17:00"},
	{12 * time.Hour, "12h", "17 */12 * * *", "*-*-* 00/12:17:00"},
	{6 * time.Hour, "6h", "17 */6 * * *", "*-*-* 00/6:17:00"},
	{4 * time.Hour, "4h", "17 */4 * * *", "*-*-* 00/4:17:00"},
	{2 * time.Hour, "2h", "17 */2 * * *", "*-*-* 00/2:17:00"},
	{time.Hour, "1h", "17 * * * *", "*-*-* *:17:00"},
	{30 * time.Minute, "30m", "*/30 * * * *", "*-*-* *:00/30:00"},
	{15 * time.Minute, "15m", "*/15 * * * *", "*-*-* *:00/15:00"},
	{5 * time.Minute, "5m", "*/5 * * * *", "*-*-* *:00/5:00"},
}

// chooseSchedule returns the longest schedule of at most a quarter of the
// CRL lifetime, so that three runs can fail before a CRL expires.
func chooseSchedule(lifetime time.Duration) (schedule, error) {
	for _, s := range schedules {
		if s.every <= lifetime/4 {
			return s, nil
		}
	}
	return schedule{}, fmt.Errorf("the CA's CRL lifetime %s is too short for a scheduled job (at least 20m)", ca.FormatDuration(lifetime))
}

func jobFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "server", Usage: "what to reload after publishing: nginx, apache, haproxy or proxy (required)"},
		&cli.StringFlag{Name: "password-file", Usage: "the file the job reads the CA key's password from (needed when the key is encrypted)"},
		minicaPathFlag(),
	}
}

func minicaPathFlag() cli.Flag {
	return &cli.StringFlag{Name: "minica", Usage: "the path of the minica binary on the server (default: this one)"}
}

func cronCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:        "cron",
		Usage:       "print an /etc/cron.d job that republishes the CRL and reloads the server",
		ArgsUsage:   " ",
		Description: "The job runs at most every quarter of the CA's CRL lifetime (daily for 7d).\n\nExample:\n   minica config cron --server nginx > /etc/cron.d/minica-crl",
		Flags:       jobFlags(),
		Action:      func(c *cli.Context) error { return runJob(c, e, writeCron) },
	}
}

func systemdCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:        "systemd",
		Usage:       "print a systemd service and timer that republish the CRL and reload the server",
		ArgsUsage:   " ",
		Description: "The timer fires at most every quarter of the CA's CRL lifetime (daily for 7d).\n\nExample:\n   minica config systemd --server apache",
		Flags:       jobFlags(),
		Action:      func(c *cli.Context) error { return runJob(c, e, writeSystemd) },
	}
}

// job is a CRL job, resolved from the flags and the CA directory.
type job struct {
	server   string
	command  string // the minica crl command line
	lifetime time.Duration
	sched    schedule
}

func runJob(c *cli.Context, e *env, write func(io.Writer, *job)) error {
	if err := wantArgs(c, 0, 0); err != nil {
		return err
	}
	j, err := loadJob(c, e, c.String("server"))
	if err != nil {
		return err
	}
	write(e.stdout, j)
	return nil
}

func loadJob(c *cli.Context, e *env, server string) (*job, error) {
	if _, ok := reloadCommands[server]; !ok {
		if server == "" {
			return nil, usagef(c, "--server is required: nginx, apache, haproxy or proxy")
		}
		return nil, usagef(c, "--server: unknown server %q: want nginx, apache, haproxy or proxy", server)
	}
	bin, err := minicaPath(c)
	if err != nil {
		return nil, err
	}
	authority, err := openCA(c, e)
	if err != nil {
		return nil, err
	}
	defer authority.Close()
	lifetime := crlLifetime(authority)
	sched, err := chooseSchedule(lifetime)
	if err != nil {
		return nil, withHint(err, "lengthen the CA's CRL lifetime in settings.json")
	}
	args := []string{bin, "--dir", authority.Path("."), "crl"}
	args[2] = strings.TrimSuffix(args[2], "/.")
	encrypted, err := authority.KeyEncrypted()
	if err != nil {
		return nil, err
	}
	if pw := c.String("password-file"); pw != "" {
		abs, err := filepath.Abs(pw)
		if err != nil {
			return nil, fmt.Errorf("resolving --password-file %q: %w", pw, err)
		}
		args = append(args, "--password-file", abs)
	} else if encrypted {
		return nil, withHint(fmt.Errorf("the CA key is encrypted and the job runs unattended"),
			"pass --password-file FILE, a file only root can read that holds the password")
	}
	return &job{server: server, command: shellJoin(args), lifetime: lifetime, sched: sched}, nil
}

// minicaPath is --minica, or the absolute path of this executable.
func minicaPath(c *cli.Context) (string, error) {
	if p := c.String("minica"); p != "" {
		if !filepath.IsAbs(p) {
			return "", usagef(c, "--minica: %q is not an absolute path", p)
		}
		return p, nil
	}
	p, err := os.Executable()
	if err != nil {
		return "", withHint(fmt.Errorf("finding the minica binary: %w", err), "pass --minica PATH")
	}
	return p, nil
}

func writeCron(w io.Writer, j *job) {
	fmt.Fprintf(w, "# Republish the minica CRL every %s (the CA's CRLs live %s) and reload %s,\n",
		j.sched.label, ca.FormatDuration(j.lifetime), j.server)
	fmt.Fprintf(w, "# so that it never serves a CRL past its nextUpdate.\n")
	fmt.Fprintf(w, "# Save as /etc/cron.d/minica-crl (the sixth field is the user).\n")
	fmt.Fprintf(w, "SHELL=/bin/sh\nPATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n")
	fmt.Fprintf(w, "%s root %s && %s\n", j.sched.cron, j.command, reloadCommands[j.server].shell)
}

func writeSystemd(w io.Writer, j *job) {
	unit := reloadCommands[j.server].unit
	fmt.Fprintf(w, "# Republish the minica CRL every %s (the CA's CRLs live %s) and reload %s.\n",
		j.sched.label, ca.FormatDuration(j.lifetime), unit)
	fmt.Fprintf(w, "# Save the units below, then:\n#   systemctl daemon-reload && systemctl enable --now minica-crl.timer\n\n")
	fmt.Fprintf(w, "### /etc/systemd/system/minica-crl.service\n")
	fmt.Fprintf(w, "[Unit]\nDescription=Republish the minica CRL and reload %s\n\n", unit)
	fmt.Fprintf(w, "[Service]\nType=oneshot\nExecStart=%s\nExecStartPost=/usr/bin/systemctl reload %s\n\n", j.command, unit)
	fmt.Fprintf(w, "### /etc/systemd/system/minica-crl.timer\n")
	fmt.Fprintf(w, "[Unit]\nDescription=Republish the minica CRL every %s\n\n", j.sched.label)
	fmt.Fprintf(w, "[Timer]\nOnCalendar=%s\nRandomizedDelaySec=5m\nPersistent=true\n\n", j.sched.calendar)
	fmt.Fprintf(w, "[Install]\nWantedBy=timers.target\n")
}

// shellJoin quotes each argument that needs it for sh and systemd.
func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@,+") == "" {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}

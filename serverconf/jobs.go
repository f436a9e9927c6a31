package serverconf

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"minica/ca"
)

// reloadCommands is how each server is told to read the new CRL, from cron
// (a shell) and from systemd.
var reloadCommands = map[string]struct{ shell, unit string }{
	Nginx:   {"nginx -s reload", "nginx"},
	Apache:  {"apachectl graceful", "apache2"},
	HAProxy: {"systemctl reload haproxy", "haproxy"},
	Proxy:   {"systemctl reload minica-proxy", "minica-proxy"},
}

// Proxy is the server name of `minica proxy` in a Job.
const Proxy = "proxy"

// JobServers are the servers a Job may reload after publishing.
var JobServers = []string{Nginx, Apache, HAProxy, Proxy}

// Job is a CRL job: it runs `minica crl` on the CA and reloads a server.
type Job struct {
	Server       string        // one of JobServers
	Minica       string        // the absolute path of the minica binary
	Dir          string        // the absolute CA directory
	PasswordFile string        // the absolute CA key password file, "" for none
	CRLLifetime  time.Duration // the CA's CRL lifetime
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

// ErrLifetimeTooShort is returned, wrapped, by CheckLifetime (and so by
// Cron, Systemd and SystemdProxy) for a CRL lifetime under 20 minutes.
var ErrLifetimeTooShort = errors.New("too short for a scheduled job (at least 20m)")

// CheckLifetime reports whether a job can republish CRLs of this lifetime:
// it must run at most every quarter of it, so that three runs can fail
// before a CRL expires, and the shortest interval is 5 minutes.
func CheckLifetime(lifetime time.Duration) error {
	_, err := chooseSchedule(lifetime)
	return err
}

// chooseSchedule returns the longest schedule of at most a quarter of the
// CRL lifetime.
func chooseSchedule(lifetime time.Duration) (schedule, error) {
	for _, s := range schedules {
		if s.every <= lifetime/4 {
			return s, nil
		}
	}
	return schedule{}, fmt.Errorf("the CA's CRL lifetime %s is %w", ca.FormatDuration(lifetime), ErrLifetimeTooShort)
}

// check returns j's schedule and its `minica crl` command line.
func (j *Job) check() (schedule, string, error) {
	if _, ok := reloadCommands[j.Server]; !ok {
		return schedule{}, "", fmt.Errorf("unknown server %q: want nginx, apache, haproxy or proxy", j.Server)
	}
	for _, p := range []struct{ what, path string }{
		{"minica binary", j.Minica}, {"CA directory", j.Dir}, {"password file", j.PasswordFile},
	} {
		if !filepath.IsAbs(p.path) && (p.path != "" || p.what != "password file") {
			return schedule{}, "", fmt.Errorf("the %s path %q is not absolute", p.what, p.path)
		}
	}
	sched, err := chooseSchedule(j.CRLLifetime)
	if err != nil {
		return schedule{}, "", err
	}
	args := []string{j.Minica, "--dir", j.Dir, "crl"}
	if j.PasswordFile != "" {
		args = append(args, "--password-file", j.PasswordFile)
	}
	return sched, shellJoin(args), nil
}

// Cron returns an /etc/cron.d file that runs j as root at most every
// quarter of the CRL lifetime. It fails for an unknown server, a relative
// path or a lifetime under 20 minutes.
func Cron(j *Job) (string, error) {
	sched, command, err := j.check()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Republish the minica CRL every %s (the CA's CRLs live %s) and reload %s,\n",
		sched.label, ca.FormatDuration(j.CRLLifetime), j.Server)
	fmt.Fprintf(&b, "# so that it never serves a CRL past its nextUpdate.\n")
	fmt.Fprintf(&b, "# Save as /etc/cron.d/minica-crl (the sixth field is the user).\n")
	fmt.Fprintf(&b, "SHELL=/bin/sh\nPATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n")
	fmt.Fprintf(&b, "%s root %s && %s\n", sched.cron, command, reloadCommands[j.Server].shell)
	return b.String(), nil
}

// Systemd returns a systemd service and timer that run j at most every
// quarter of the CRL lifetime. It fails as Cron does.
func Systemd(j *Job) (string, error) {
	sched, command, err := j.check()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	writeSystemd(&b, j, sched, command)
	return b.String(), nil
}

func writeSystemd(b *strings.Builder, j *Job, sched schedule, command string) {
	unit := reloadCommands[j.Server].unit
	fmt.Fprintf(b, "# Republish the minica CRL every %s (the CA's CRLs live %s) and reload %s.\n",
		sched.label, ca.FormatDuration(j.CRLLifetime), unit)
	fmt.Fprintf(b, "# Save the units below, then:\n#   systemctl daemon-reload && systemctl enable --now minica-crl.timer\n\n")
	fmt.Fprintf(b, "### /etc/systemd/system/minica-crl.service\n")
	fmt.Fprintf(b, "[Unit]\nDescription=Republish the minica CRL and reload %s\n\n", unit)
	fmt.Fprintf(b, "[Service]\nType=oneshot\nExecStart=%s\nExecStartPost=/usr/bin/systemctl reload %s\n\n", command, unit)
	fmt.Fprintf(b, "### /etc/systemd/system/minica-crl.timer\n")
	fmt.Fprintf(b, "[Unit]\nDescription=Republish the minica CRL every %s\n\n", sched.label)
	fmt.Fprintf(b, "[Timer]\nOnCalendar=%s\nRandomizedDelaySec=5m\nPersistent=true\n\n", sched.calendar)
	fmt.Fprintf(b, "[Install]\nWantedBy=timers.target\n")
}

// SystemdProxy returns a systemd service that runs `minica proxy` for the
// front end f, followed by the units of Systemd for j, whose Server must be
// Proxy. It fails when f.Check or Systemd would.
func SystemdProxy(f *Front, j *Job) (string, error) {
	if err := f.Check(); err != nil {
		return "", err
	}
	if j.Server != Proxy {
		return "", fmt.Errorf("the CRL job of a proxy reloads %q, not %q", Proxy, j.Server)
	}
	sched, command, err := j.check()
	if err != nil {
		return "", err
	}
	listen := f.Listen()
	if f.ListenAddr == "" {
		listen = fmt.Sprintf(":%d", f.ListenPort)
	}
	cmd := shellJoin([]string{j.Minica, "--dir", f.Dir, "proxy", "--server-cert", f.Name, "--upstream", f.Upstream.String(), "--listen", listen})
	var b strings.Builder
	fmt.Fprintf(&b, "# Run 'minica proxy' for %s in front of %s, and republish the CRL every %s\n",
		f.ServerName, f.Upstream, sched.label)
	fmt.Fprintf(&b, "# (the CA's CRLs live %s). Enable the proxy with:\n", ca.FormatDuration(f.CRLLifetime))
	fmt.Fprintf(&b, "#   systemctl daemon-reload && systemctl enable --now minica-proxy.service\n\n")
	fmt.Fprintf(&b, "### /etc/systemd/system/minica-proxy.service\n")
	fmt.Fprintf(&b, "[Unit]\nDescription=minica mTLS proxy for %s\nWants=network-online.target\nAfter=network-online.target\n\n", f.ServerName)
	fmt.Fprintf(&b, "[Service]\nExecStart=%s\n", cmd)
	fmt.Fprintf(&b, "# SIGHUP reloads the CA, the CRL and the server certificate; SIGTERM drains.\n")
	fmt.Fprintf(&b, "ExecReload=/bin/kill -HUP $MAINPID\nRestart=on-failure\nNoNewPrivileges=yes\nPrivateTmp=yes\n")
	fmt.Fprintf(&b, "ProtectSystem=full\nProtectHome=read-only\n\n")
	fmt.Fprintf(&b, "[Install]\nWantedBy=multi-user.target\n\n")
	writeSystemd(&b, j, sched, command)
	return b.String(), nil
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

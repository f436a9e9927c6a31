package serverconf

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"minica/ca"
)

// Fetch is a CRL fetch job on a web server host that has no CA directory:
// every Every it runs `minica crl fetch`, which makes one conditional GET of
// URL, checks a new CRL against the CA file, installs it in HostDir and
// only then reloads the server.
type Fetch struct {
	Server  string // Nginx, Apache or HAProxy
	Minica  string // the absolute path of the minica binary on the host
	URL     string // the CRL's http or https URL, e.g. the CA's CRL URL
	HostDir string // the absolute directory on the host of ca.pem and crl.pem ("" for DefaultHostDir)
	CRLCA   string // for an https URL, the CA file that verifies its server ("" for the system roots)
	// CAFingerprint, when set, is the SHA-256 fingerprint of the CA (hex)
	// that the host's ca.pem must hold: crl fetch's --ca-fingerprint.
	CAFingerprint string
	Reload        string        // the shell command that reloads the server ("" for DefaultReload)
	Every         time.Duration // how often to fetch (0 for DefaultFetchEvery)
}

// DefaultFetchEvery is how often a fetch job asks for a new CRL: a 304
// costs one small request, and a revocation reaches the server within it.
const DefaultFetchEvery = time.Minute

// The files of HostDir: the CA chain (a copy of the CA directory's
// chain.pem) and the CRL the fetch job keeps there, both PEM, which is what
// nginx's ssl_crl, Apache's SSLCARevocationFile and HAProxy's crl-file read.
const (
	HostCAFile  = "ca.pem"
	HostCRLFile = "crl.pem"
)

// DefaultHostDir is where the CA and CRL files live on a host of server.
func DefaultHostDir(server string) string {
	switch server {
	case Apache:
		return "/etc/apache2/minica"
	case HAProxy:
		return "/etc/haproxy/minica"
	}
	return "/etc/nginx/minica"
}

// DefaultReload is the command a fetch job reloads server with. It never
// fails because the server is stopped, so that the first fetch on a new
// host installs the CRL before the server ever starts.
func DefaultReload(server string) string {
	return "systemctl try-reload-or-restart " + reloadCommands[server].unit
}

// command checks f and returns the `minica crl fetch` command line, the
// host directory and the interval.
func (f *Fetch) command() (args []string, dir string, every time.Duration, err error) {
	if f.Server != Nginx && f.Server != Apache && f.Server != HAProxy {
		return nil, "", 0, fmt.Errorf("unknown server %q: want nginx, apache or haproxy", f.Server)
	}
	dir, every = f.HostDir, f.Every
	if dir == "" {
		dir = DefaultHostDir(f.Server)
	}
	if every == 0 {
		every = DefaultFetchEvery
	}
	for _, p := range []struct{ what, path string }{
		{"minica binary", f.Minica}, {"host directory", dir}, {"CRL server's CA file", f.CRLCA},
	} {
		if !filepath.IsAbs(p.path) && (p.path != "" || p.what != "CRL server's CA file") {
			return nil, "", 0, fmt.Errorf("the %s path %q is not absolute", p.what, p.path)
		}
	}
	u, err := url.Parse(f.URL)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Fragment != "":
		return nil, "", 0, fmt.Errorf("the CRL URL %q is not an http or https URL", f.URL)
	case u.Scheme == "http" && f.CRLCA != "":
		return nil, "", 0, fmt.Errorf("the CRL URL %q is http: a CA file for its server is for https", f.URL)
	case every < 10*time.Second || every > 24*time.Hour:
		return nil, "", 0, fmt.Errorf("the fetch interval %s is not from 10s to 1d", ca.FormatDuration(every))
	}
	reload := f.Reload
	if reload == "" {
		reload = DefaultReload(f.Server)
	}
	args = []string{f.Minica, "crl", "fetch", f.URL,
		"--out", filepath.Join(dir, HostCRLFile), "--ca", filepath.Join(dir, HostCAFile)}
	if f.CRLCA != "" {
		args = append(args, "--crl-ca", f.CRLCA)
	}
	if f.CAFingerprint != "" {
		if err := checkFingerprint(f.CAFingerprint); err != nil {
			return nil, "", 0, err
		}
		args = append(args, "--ca-fingerprint", f.CAFingerprint)
	}
	return append(args, "--exec", reload), dir, every, nil
}

// CRLFetch returns a systemd service and timer for the host of f.Server
// that keep HostDir/crl.pem equal to the CRL at f.URL: every f.Every (with a
// random delay, so that many hosts don't ask at the same second) one
// conditional GET; a new CRL is checked against HostDir/ca.pem, installed
// atomically and followed by one reload; an unchanged one reloads nothing.
// It fails for an unknown server, a relative path, a URL that is not http
// or https, or an interval outside 10s to 1d.
func CRLFetch(f *Fetch) (string, error) {
	args, dir, every, err := f.command()
	if err != nil {
		return "", err
	}
	unit := reloadCommands[f.Server].unit
	label := ca.FormatDuration(every)
	var b strings.Builder
	fmt.Fprintf(&b, "# Fetch the minica CRL from %s every %s\n", f.URL, label)
	fmt.Fprintf(&b, "# into %s and reload %s only when it changed,\n", filepath.Join(dir, HostCRLFile), unit)
	fmt.Fprintf(&b, "# on a host with no CA directory. First copy the CA's chain.pem to\n")
	fmt.Fprintf(&b, "# %s and point %s at the CRL there, with the\n", filepath.Join(dir, HostCAFile), f.Server)
	fmt.Fprintf(&b, "# configuration of 'minica config %s --host-dir %s'. Then:\n", f.Server, shellJoin([]string{dir}))
	fmt.Fprintf(&b, "#   systemctl daemon-reload && systemctl enable --now minica-crl-fetch.timer\n")
	fmt.Fprintf(&b, "# A CRL that fails the checks is not installed: the server keeps the last\n")
	fmt.Fprintf(&b, "# good one and the service fails with the reason (journalctl -u minica-crl-fetch).\n\n")
	fmt.Fprintf(&b, "### /etc/systemd/system/minica-crl-fetch.service\n")
	fmt.Fprintf(&b, "[Unit]\nDescription=Fetch the minica CRL and reload %s when it changed\n", unit)
	fmt.Fprintf(&b, "Wants=network-online.target\nAfter=network-online.target\n\n")
	fmt.Fprintf(&b, "[Service]\nType=oneshot\nExecStart=%s\n", unitEscape(shellJoin(args)))
	fmt.Fprintf(&b, "TimeoutStartSec=2min\n")
	fmt.Fprintf(&b, "# It writes only the host directory (the new CRL, atomically).\n")
	fmt.Fprintf(&b, "ProtectSystem=strict\nReadWritePaths=%s\nProtectHome=read-only\n", unitEscape(shellJoin([]string{dir})))
	fmt.Fprintf(&b, "NoNewPrivileges=yes\nPrivateTmp=yes\nPrivateDevices=yes\nUMask=0022\n\n")
	fmt.Fprintf(&b, "### /etc/systemd/system/minica-crl-fetch.timer\n")
	fmt.Fprintf(&b, "[Unit]\nDescription=Fetch the minica CRL every %s\n\n", label)
	fmt.Fprintf(&b, "[Timer]\nOnActiveSec=0\nOnUnitActiveSec=%s\n", systemdSpan(every))
	fmt.Fprintf(&b, "RandomizedDelaySec=%s\nAccuracySec=1s\n\n", systemdSpan(every/4))
	fmt.Fprintf(&b, "[Install]\nWantedBy=timers.target\n")
	return b.String(), nil
}

// systemdSpan is d as a systemd time span, in seconds.
func systemdSpan(d time.Duration) string {
	return fmt.Sprintf("%ds", int64(d/time.Second))
}

// OnHost points f at copies of its files in dir on the server's host,
// where no CA directory is: dir/ca.pem (the CA chain), dir/crl.pem (kept
// fresh by the job of CRLFetch), and the server certificate, chain and key
// as dir/NAME.crt, dir/NAME.chain.pem and dir/NAME.key. f.HostFiles then
// lists what to copy where.
func (f *Front) OnHost(dir string) {
	f.HostDir = dir
	files := []struct {
		path *string
		name string
	}{
		{&f.CertFile, f.Name + ".crt"}, {&f.ChainFile, f.Name + ".chain.pem"}, {&f.KeyFile, f.Name + ".key"},
		{&f.CAFile, HostCAFile},
	}
	f.HostFiles = nil
	for _, p := range files {
		to := filepath.Join(dir, p.name)
		f.HostFiles = append(f.HostFiles, HostFile{From: *p.path, To: to})
		*p.path = to
	}
	f.CRLFile = filepath.Join(dir, HostCRLFile)
}

// HostFile is a file of the CA directory a server host needs a copy of.
type HostFile struct{ From, To string }

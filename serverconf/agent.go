package serverconf

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Agent is `minica agent` as a systemd service runs it on a service host.
type Agent struct {
	Name   string // the service's name: the unit is minica-agent-NAME.service
	Minica string // the absolute path of the minica binary
	URL    string // serve's HTTPS listener, https://HOST:PORT
	CAFile string // the absolute path of the CA certificate that verifies serve
	// CAFingerprint, when set, is the SHA-256 fingerprint of the CA
	// (hex) that CAFile must hold: the agent's --ca-fingerprint.
	CAFingerprint string
	CertFile      string // the absolute path of the certificate kept fresh
	KeyFile       string // the absolute path of its key
	ChainFile     string // the absolute path of the chain file, "" for none
	// TokenFile is the absolute path of a one-time bootstrap token (`minica
	// token`) that gets the first certificate while CertFile does not
	// exist, "" for none: the agent's --token-file.
	TokenFile string
	Exec      []string // the command run after a renewal, nil for none
	RenewAt   float64  // the fraction of the lifetime; 0 for the agent's default
	User      string   // the user the service runs as (the files' owner), "" for root
}

// SystemdAgent returns a hardened systemd service that runs `minica agent`
// for one certificate: it may write only the directories of the
// certificate, key and chain (the agent writes each file beside itself and
// renames it), reloads (re-reads the files) on systemctl reload, and is
// restarted after a crash but not after it exited because the certificate
// expired or was revoked (exit status 1), which no restart mends. It fails
// for a relative path, a URL that is not https, a bad name or fraction.
func SystemdAgent(a *Agent) (string, error) {
	if !isServiceName(a.Name) {
		return "", fmt.Errorf("the service name %q is not letters, digits, '-', '_' and '.'", a.Name)
	}
	for _, p := range []struct {
		what, path string
		optional   bool
	}{
		{"minica binary", a.Minica, false}, {"CA file", a.CAFile, false}, {"certificate", a.CertFile, false},
		{"key", a.KeyFile, false}, {"chain file", a.ChainFile, true}, {"token file", a.TokenFile, true},
	} {
		if !filepath.IsAbs(p.path) && (p.path != "" || !p.optional) {
			return "", fmt.Errorf("the %s path %q is not absolute", p.what, p.path)
		}
	}
	if u, err := url.Parse(a.URL); err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
		return "", fmt.Errorf("the renewal URL %q is not https://HOST:PORT", a.URL)
	}
	if a.RenewAt < 0 || a.RenewAt >= 1 {
		return "", fmt.Errorf("the renewal fraction %v is not from 0 to below 1", a.RenewAt)
	}
	if a.Exec != nil && len(a.Exec) == 0 {
		return "", fmt.Errorf("the command after a renewal is empty")
	}
	args := []string{a.Minica, "agent", "--url", a.URL, "--ca", a.CAFile, "--cert", a.CertFile, "--key", a.KeyFile}
	if a.CAFingerprint != "" {
		if err := checkFingerprint(a.CAFingerprint); err != nil {
			return "", err
		}
		args = append(args, "--ca-fingerprint", a.CAFingerprint)
	}
	if a.ChainFile != "" {
		args = append(args, "--chain", a.ChainFile)
	}
	if a.TokenFile != "" {
		args = append(args, "--token-file", a.TokenFile)
	}
	if a.RenewAt > 0 {
		args = append(args, "--renew-at", strconv.FormatFloat(a.RenewAt, 'f', -1, 64))
	}
	if a.Exec != nil {
		args = append(args, "--exec", shellJoin(a.Exec))
	}
	var dirs []string
	for _, f := range []string{a.CertFile, a.KeyFile, a.ChainFile} {
		if d := filepath.Dir(f); f != "" && !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	unit := "minica-agent-" + a.Name + ".service"
	var b strings.Builder
	fmt.Fprintf(&b, "# Keep %s fresh with 'minica agent': it renews the certificate at\n", a.CertFile)
	fmt.Fprintf(&b, "# %s once %s of its lifetime has passed (see docs/agent.md)", a.URL, renewAtLabel(a.RenewAt))
	if a.Exec != nil {
		fmt.Fprintf(&b, ",\n# then runs %s (directly, not by a shell).\n", shellJoin(a.Exec))
	} else {
		fmt.Fprintf(&b, ".\n")
	}
	if a.TokenFile != "" {
		fmt.Fprintf(&b, "# Until %s exists, the one-time token in %s gets it\n", a.CertFile, a.TokenFile)
		fmt.Fprintf(&b, "# (minica token, on the CA host); the certificate's and key's directories must exist.\n")
	}
	fmt.Fprintf(&b, "# Enable it with:\n#   systemctl daemon-reload && systemctl enable --now %s\n\n", unit)
	fmt.Fprintf(&b, "### /etc/systemd/system/%s\n", unit)
	fmt.Fprintf(&b, "[Unit]\nDescription=minica agent: keep %s fresh\n", unitEscape(a.CertFile))
	fmt.Fprintf(&b, "Wants=network-online.target\nAfter=network-online.target\n\n")
	fmt.Fprintf(&b, "[Service]\n")
	fmt.Fprintf(&b, "ExecStart=%s\n", unitEscape(shellJoin(args)))
	if a.User != "" {
		fmt.Fprintf(&b, "# The owner of the certificate and key.\nUser=%s\n", a.User)
	}
	fmt.Fprintf(&b, "# SIGHUP re-reads the files (after they were replaced by hand).\n")
	fmt.Fprintf(&b, "ExecReload=/bin/kill -HUP $MAINPID\n")
	fmt.Fprintf(&b, "# A crash restarts it; an exit because the certificate expired or was\n")
	fmt.Fprintf(&b, "# revoked (status 1) does not: it needs a new certificate from the CA.\n")
	fmt.Fprintf(&b, "Restart=on-abnormal\nRestartSec=30s\n")
	fmt.Fprintf(&b, "# The agent writes nothing but new files beside the certificate, key and\n# chain; the command after a renewal runs in the same sandbox.\n")
	fmt.Fprintf(&b, "ProtectSystem=strict\nReadWritePaths=%s\nProtectHome=read-only\n", unitEscape(shellJoin(dirs)))
	fmt.Fprintf(&b, "PrivateTmp=yes\nPrivateDevices=yes\nUMask=0077\n")
	fmt.Fprintf(&b, "ProtectKernelTunables=yes\nProtectKernelModules=yes\nProtectControlGroups=yes\n")
	fmt.Fprintf(&b, "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX\nRestrictNamespaces=yes\n")
	fmt.Fprintf(&b, "LockPersonality=yes\nSystemCallArchitectures=native\n")
	fmt.Fprintf(&b, "\n[Install]\nWantedBy=multi-user.target\n")
	return b.String(), nil
}

func renewAtLabel(f float64) string {
	if f == 0 {
		f = 0.66
	}
	return strconv.FormatFloat(f*100, 'f', -1, 64) + "%"
}

// isServiceName reports whether s is usable in a unit name as it is.
func isServiceName(s string) bool {
	return s != "" && len(s) <= 64 && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") == "" && s[0] != '.'
}

// checkFingerprint checks that fp is a SHA-256 fingerprint in hex, as the
// unit's command line carries it: 64 hex digits, nothing else.
func checkFingerprint(fp string) error {
	if b, err := hex.DecodeString(fp); err != nil || len(b) != sha256.Size {
		return fmt.Errorf("the CA fingerprint %q is not 64 hex digits", fp)
	}
	return nil
}

package serverconf

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// Serve is `minica serve` as a systemd service runs it on the CA host.
type Serve struct {
	Minica        string // the absolute path of the minica binary
	Dir           string // the absolute CA directory
	User          string // the user the service runs as (the CA directory's owner), "" for root
	Listen        string // HTTP: PORT or ADDR:PORT, "" for none
	ListenTLS     string // HTTPS: PORT or ADDR:PORT, "" for none
	ServerCert    string // the server certificate of ListenTLS
	MetricsListen string // a separate listener for /metrics and /healthz, "" for none
	PasswordFile  string // the absolute CA key password file, "" for none
	NoSign        bool   // run without the CA key: never re-sign the CRL
}

// listenArg is a listen address as serve takes it, ADDR:PORT or :PORT for
// every address, and its port.
func listenArg(flag, s string) (string, int, error) {
	addr, port, err := ParseListen(s)
	if err != nil {
		return "", 0, fmt.Errorf("%s: %w", flag, err)
	}
	if addr == "" {
		return fmt.Sprintf(":%d", port), port, nil
	}
	return (&Front{ListenAddr: addr, ListenPort: port}).Listen(), port, nil
}

// command returns s's `minica serve` command line, and whether it listens
// on a port under 1024.
func (s *Serve) command() ([]string, bool, error) {
	for _, p := range []struct{ what, path string }{
		{"minica binary", s.Minica}, {"CA directory", s.Dir}, {"password file", s.PasswordFile},
	} {
		if !filepath.IsAbs(p.path) && (p.path != "" || p.what != "password file") {
			return nil, false, fmt.Errorf("the %s path %q is not absolute", p.what, p.path)
		}
	}
	switch {
	case s.Listen == "" && s.ListenTLS == "":
		return nil, false, errors.New("serve needs a listener: --listen, --listen-tls or both")
	case s.ListenTLS != "" && s.ServerCert == "":
		return nil, false, errors.New("--listen-tls needs --server-cert")
	case s.ListenTLS == "" && s.ServerCert != "":
		return nil, false, errors.New("--server-cert is for --listen-tls")
	case s.NoSign && s.PasswordFile != "":
		return nil, false, errors.New("--no-sign never reads the CA key: drop --password-file")
	}
	args := []string{s.Minica, "--dir", s.Dir, "serve"}
	privileged := false
	for _, l := range []struct{ flag, value string }{
		{"--listen", s.Listen}, {"--listen-tls", s.ListenTLS}, {"--metrics-listen", s.MetricsListen},
	} {
		if l.value == "" {
			continue
		}
		addr, port, err := listenArg(l.flag, l.value)
		if err != nil {
			return nil, false, err
		}
		privileged = privileged || port < 1024
		args = append(args, l.flag, addr)
		if l.flag == "--listen-tls" {
			args = append(args, "--server-cert", s.ServerCert)
		}
	}
	if s.NoSign {
		args = append(args, "--no-sign")
	}
	if s.PasswordFile != "" {
		args = append(args, "--password-file", s.PasswordFile)
	}
	return args, privileged, nil
}

// SystemdServe returns a hardened systemd service that runs `minica serve`
// for the CA in s.Dir: it may write only the CA directory (the CRLs it
// re-signs), holds no capability but the one to bind a port under 1024 when
// it needs it, and restarts on failure. It fails for a relative path, no
// listener, --listen-tls without a server certificate or a bad address.
func SystemdServe(s *Serve) (string, error) {
	args, privileged, err := s.command()
	if err != nil {
		return "", err
	}
	var listens []string
	for _, l := range []string{s.Listen, s.ListenTLS} {
		if l != "" {
			a, _, _ := listenArg("", l)
			listens = append(listens, a)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Run 'minica serve' for the CA in %s on %s:\n", s.Dir, strings.Join(listens, " and "))
	fmt.Fprintf(&b, "# the CA certificate, the chain, the CRL and OCSP (see docs/serve.md). ")
	if s.NoSign {
		fmt.Fprintf(&b, "It runs\n# without the CA key (--no-sign): republish the CRL with 'minica crl' before it lapses.\n")
	} else {
		fmt.Fprintf(&b, "It re-signs\n# the CRL once it has passed half of its lifetime, and serves the CRLs\n# that 'minica revoke' publishes at once.\n")
	}
	fmt.Fprintf(&b, "# Enable it with:\n#   systemctl daemon-reload && systemctl enable --now minica-serve.service\n\n")
	fmt.Fprintf(&b, "### /etc/systemd/system/minica-serve.service\n")
	fmt.Fprintf(&b, "[Unit]\nDescription=minica serve: CA certificate, CRL and OCSP of %s\n", unitEscape(s.Dir))
	fmt.Fprintf(&b, "Wants=network-online.target\nAfter=network-online.target\n\n")
	fmt.Fprintf(&b, "[Service]\n")
	if s.PasswordFile != "" {
		fmt.Fprintf(&b, "# Only the service's user may read the password file (mode 0400).\n")
	}
	fmt.Fprintf(&b, "ExecStart=%s\n", unitEscape(shellJoin(args)))
	if s.User != "" {
		fmt.Fprintf(&b, "# The owner of the CA directory (mode 0700).\nUser=%s\n", s.User)
	}
	if s.ListenTLS != "" {
		fmt.Fprintf(&b, "# SIGHUP reloads the HTTPS certificate (serve also checks it every minute).\n")
		fmt.Fprintf(&b, "ExecReload=/bin/kill -HUP $MAINPID\n")
	}
	fmt.Fprintf(&b, "Restart=on-failure\nRestartSec=5s\n")
	fmt.Fprintf(&b, "# serve writes nothing but the CA directory: the CRLs it re-signs, the\n# CRL number and the lock.\n")
	fmt.Fprintf(&b, "ProtectSystem=strict\nReadWritePaths=%s\nProtectHome=read-only\n", unitEscape(shellJoin([]string{s.Dir})))
	fmt.Fprintf(&b, "NoNewPrivileges=yes\nPrivateTmp=yes\nPrivateDevices=yes\nUMask=0077\n")
	fmt.Fprintf(&b, "ProtectKernelTunables=yes\nProtectKernelModules=yes\nProtectControlGroups=yes\n")
	fmt.Fprintf(&b, "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX\nRestrictNamespaces=yes\n")
	fmt.Fprintf(&b, "LockPersonality=yes\nMemoryDenyWriteExecute=yes\nSystemCallArchitectures=native\n")
	if privileged {
		fmt.Fprintf(&b, "# A port under 1024: the one capability serve needs.\n")
		fmt.Fprintf(&b, "CapabilityBoundingSet=CAP_NET_BIND_SERVICE\nAmbientCapabilities=CAP_NET_BIND_SERVICE\n")
	} else {
		fmt.Fprintf(&b, "CapabilityBoundingSet=\n")
	}
	fmt.Fprintf(&b, "\n[Install]\nWantedBy=multi-user.target\n")
	return b.String(), nil
}

// unitEscape keeps systemd from expanding a command line or a path: a
// literal % is %% (specifiers) and a literal $ is $$ (environment
// variables); the quoting of shellJoin is systemd's too.
func unitEscape(s string) string {
	return strings.NewReplacer("%", "%%", "$", "$$").Replace(s)
}

package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

func systemdProxyCommand(e *env) *cli.Command {
	flags := append(frontFlags(), minicaPathFlag(),
		&cli.StringFlag{Name: "password-file", Usage: "the file the CRL job reads the CA key's password from (needed when the key is encrypted)"})
	return &cli.Command{
		Name:      "systemd-proxy",
		Usage:     "print a systemd service that runs 'minica proxy', and a timer that republishes the CRL",
		ArgsUsage: " ",
		Description: "The service runs 'minica proxy' with the given flags; the proxy reloads the\n" +
			"CRL when the file changes (and on SIGHUP, 'systemctl reload minica-proxy').\n\n" +
			"Example:\n   minica config systemd-proxy --server-cert app.example.com --upstream http://127.0.0.1:8080 --listen 443",
		Flags:  flags,
		Action: func(c *cli.Context) error { return runSystemdProxy(c, e) },
	}
}

func runSystemdProxy(c *cli.Context, e *env) error {
	f, err := loadFront(c, e)
	if err != nil {
		return err
	}
	j, err := loadJob(c, e, "proxy")
	if err != nil {
		return err
	}
	bin, _ := minicaPath(c) // loadJob checked it
	listen := f.Listen()
	if f.ListenAddr == "" {
		listen = ":" + f.ListenPort
	}
	cmd := shellJoin([]string{bin, "--dir", f.Dir, "proxy", "--server-cert", f.Name, "--upstream", f.Upstream.String(), "--listen", listen})
	w := e.stdout
	fmt.Fprintf(w, "# Run 'minica proxy' for %s in front of %s, and republish the CRL every %s\n",
		f.ServerName, f.Upstream, j.sched.label)
	fmt.Fprintf(w, "# (the CA's CRLs live %s). Enable the proxy with:\n", f.CRLLife)
	fmt.Fprintf(w, "#   systemctl daemon-reload && systemctl enable --now minica-proxy.service\n\n")
	fmt.Fprintf(w, "### /etc/systemd/system/minica-proxy.service\n")
	fmt.Fprintf(w, "[Unit]\nDescription=minica mTLS proxy for %s\nWants=network-online.target\nAfter=network-online.target\n\n", f.ServerName)
	fmt.Fprintf(w, "[Service]\nExecStart=%s\n", cmd)
	fmt.Fprintf(w, "# SIGHUP reloads the CA, the CRL and the server certificate; SIGTERM drains.\n")
	fmt.Fprintf(w, "ExecReload=/bin/kill -HUP $MAINPID\nRestart=on-failure\nNoNewPrivileges=yes\nPrivateTmp=yes\n")
	fmt.Fprintf(w, "ProtectSystem=full\nProtectHome=read-only\n\n")
	fmt.Fprintf(w, "[Install]\nWantedBy=multi-user.target\n\n")
	writeSystemd(w, j)
	return nil
}

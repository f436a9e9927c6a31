package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"minica/ca"
)

// copyFlags are the flags of issue and sign that write copies of what they
// issued where the user wants them; withKey adds --key-out (sign never
// holds the key). The overwrite flag is --overwrite: issue's --force is
// about the name.
func copyFlags(withKey bool) []cli.Flag {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "cert-out", Usage: "also write the certificate (PEM, 0644) to `FILE`"},
		&cli.StringFlag{Name: "chain-out", Usage: "also write the certificate and the CA chain (PEM, 0644) to `FILE`"},
	}
	if withKey {
		flags = append(flags, &cli.StringFlag{Name: "key-out", Usage: "also write the private key (PEM, 0600) to `FILE`"})
	}
	return append(flags, &cli.BoolFlag{Name: "overwrite", Usage: "replace existing --cert-out, --key-out or --chain-out files"})
}

var copyWhat = map[string]string{"key-out": "private key", "chain-out": "certificate and CA chain", "cert-out": "certificate"}

// copyTarget is one --*-out file and what it gets.
type copyTarget struct {
	flag, path string
}

// copyTargets returns the --*-out files, after checking that none exists
// unless --overwrite is set, so that a taken one stops the command before
// anything is issued; so does a missing directory.
func copyTargets(c *cli.Context) ([]copyTarget, error) {
	var targets []copyTarget
	for _, flag := range []string{"key-out", "chain-out", "cert-out"} {
		if p := c.String(flag); p != "" {
			targets = append(targets, copyTarget{flag, p})
		}
	}
	for _, t := range targets {
		if info, err := os.Stat(filepath.Dir(t.path)); err != nil || !info.IsDir() {
			return nil, usagef(c, "--%s: %s: no directory %s", t.flag, t.path, filepath.Dir(t.path))
		}
	}
	if c.Bool("overwrite") {
		return targets, nil
	}
	for _, t := range targets {
		if _, err := os.Lstat(t.path); err == nil {
			return nil, withHint(fmt.Errorf("--%s: %s %w", t.flag, t.path, errOutExists), "pass --overwrite to replace it, or choose another file")
		}
	}
	return targets, nil
}

// writeCopies writes the copies of what was issued: the key first, so
// that a certificate copy never stands without its key.
func writeCopies(c *cli.Context, e *env, targets []copyTarget, is *ca.Issued) error {
	var files []outFile
	for _, t := range targets {
		var src string
		perm := os.FileMode(0o644)
		switch t.flag {
		case "key-out":
			src, perm = is.KeyFile, 0o600
		case "chain-out":
			src = is.ChainFile
		case "cert-out":
			src = is.CertFile
		}
		data, err := os.ReadFile(src)
		if err != nil {
			return fmt.Errorf("reading %q for --%s: %w", src, t.flag, err)
		}
		files = append(files, outFile{t.path, data, perm})
	}
	if err := writeOutFiles(files, c.Bool("overwrite")); err != nil {
		return fmt.Errorf("serial %s was issued, but writing its copies failed: %w", is.Record.Serial, err)
	}
	report := e.stdout
	if c.Bool("json") {
		report = e.stderr // stdout holds one JSON object
	}
	for i, f := range files {
		fmt.Fprintf(report, "wrote %s (%s)\n", f.path, copyWhat[targets[i].flag])
	}
	return nil
}

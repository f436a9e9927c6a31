package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"minica/ca"
)

func signIntermediateCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "sign-intermediate",
		Usage:     "sign an intermediate CA's CSR with this root CA, with the names it may certify",
		ArgsUsage: "CSR",
		Description: "On a root CA (init --root) only. The certificate is CA:TRUE pathLen 0,\n" +
			"keyCertSign|cRLSign, with the root's CRL URL and OCSP URL when set, and the\n" +
			"--permit-* and --exclude-* name constraints, marked critical. With any\n" +
			"--permit-*, a name type without one is excluded. Only the CSR's key and\n" +
			"subject are used. The root records the intermediate under --name (default:\n" +
			"the CSR file's name without its extension), so that 'minica revoke NAME\n" +
			"--reason cACompromise' revokes it. --out gets the certificate followed by\n" +
			"the root's, the file that travels back with the root's CRL.\n\n" +
			"Example:\n   minica --dir /media/usb/root sign-intermediate int1.csr --permit-dns example.com \\\n" +
			"     --permit-email example.com --validity 5y --out int1.crt",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "name", Usage: "the intermediate's name in the root's database (default: the CSR file's base name)"},
			validityFlag("", "lifetime, e.g. 5y (default 5y); it must end before the root's"),
			&cli.StringFlag{Name: "out", Usage: "write the certificate and the root's to `FILE` (default: stdout)"},
			&cli.BoolFlag{Name: "force", Usage: "sign even if NAME has a valid certificate; replace --out"},
			passwordFileFlag(),
			pinFileFlag(),
			jsonFlag(),
		}, constraintFlags()...),
		Action: func(c *cli.Context) error { return runSignIntermediate(c, e) },
	}
}

func runSignIntermediate(c *cli.Context, e *env) error {
	if err := wantArgs(c, 1, 1); err != nil {
		return err
	}
	file := c.Args().First()
	name := c.String("name")
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
		if ca.ValidateName(name) != nil {
			return usagef(c, "the CSR file's name %q cannot serve as the intermediate's name; pass --name", name)
		}
	} else if err := ca.ValidateName(name); err != nil {
		return usagef(c, "--name: %v", err)
	}
	k, err := constraintValues(c)
	if err != nil {
		return err
	}
	if err := k.Validate(); err != nil {
		return usagef(c, "%v", err)
	}
	validity, err := validityValue(c)
	if err != nil {
		return err
	}
	out := c.String("out")
	if out != "" && !c.Bool("force") {
		if _, err := os.Lstat(out); err == nil {
			return withHint(fmt.Errorf("%s %w", out, errOutExists), "pass --force to replace it, or choose another output file")
		}
	}
	csrData, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("reading CSR: %w", err)
	}
	csr, err := readCSR(file)
	if err != nil {
		return err
	}
	authority, unlock, err := lockCA(c, e)
	if err != nil {
		return err
	}
	defer unlock()
	if !authority.IsRoot() {
		return withHint(fmt.Errorf("%w: %q is not a root CA", ca.ErrNotRoot, authority.Dir().Path()),
			"sign intermediates with a root made by 'minica init --root'; this CA issues leaves itself")
	}
	signer, err := loadSigner(c, e, authority)
	if err != nil {
		return err
	}
	issued, err := authority.SignIntermediate(signer, ca.IntermediateRequest{Name: name, CSR: csr, Validity: validity, Constraints: k, Force: c.Bool("force")})
	if err != nil {
		return err
	}
	chain, err := os.ReadFile(issued.ChainFile)
	if err != nil {
		return fmt.Errorf("reading the chain just written: %w", err)
	}
	if out != "" {
		if err := writeOutFiles([]outFile{{path: out, data: chain, perm: 0o644}}, c.Bool("force")); err != nil {
			return fmt.Errorf("signed %q (serial %s), but: %w", name, issued.Record.Serial, err)
		}
	}
	csrSum, outSum := sha256.Sum256(csrData), sha256.Sum256(chain)
	r := issued.Record
	if c.Bool("json") {
		return writeJSON(e.stdout, map[string]any{
			"name": r.Name, "serial": r.Serial, "subject": r.Subject, "not_before": r.NotBefore, "not_after": r.NotAfter,
			"sha256": r.Fingerprint, "cert": issued.CertFile, "chain": issued.ChainFile, "out": out,
			"csr_sha256": hex.EncodeToString(csrSum[:]), "out_sha256": hex.EncodeToString(outSum[:]),
		})
	}
	if out == "" {
		_, err := e.stdout.Write(chain)
		fmt.Fprintf(e.stderr, "signed intermediate %q (serial %s), not after %s\n", name, r.Serial, day(r.NotAfter))
		return err
	}
	fmt.Fprintf(e.stdout, "signed intermediate CA %q as %q\n", issued.Cert.Subject.CommonName, name)
	fmt.Fprintf(e.stdout, "  serial     %s\n", r.Serial)
	fmt.Fprintf(e.stdout, "  not after  %s\n", day(r.NotAfter))
	if permits := permitsLine(k); permits != "" {
		fmt.Fprintf(e.stdout, "  permits    %s\n", permits)
	}
	fmt.Fprintf(e.stdout, "  csr sha256 %s  (%s, as read)\n", hex.EncodeToString(csrSum[:]), file)
	fmt.Fprintf(e.stdout, "  out        %s\n", out)
	fmt.Fprintf(e.stdout, "  sha256     %s  (compare with sha256sum on the issuing host)\n", hex.EncodeToString(outSum[:]))
	return nil
}

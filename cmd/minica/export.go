package main

import (
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"minica/ca"
	"minica/formats"
)

func exportCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:        "export",
		Usage:       "export an issued certificate in another format",
		Subcommands: []*cli.Command{exportP12Command(e)},
	}
}

// p12OutFlags are the flags of every command that writes a .p12.
func p12OutFlags(passwordFileFlag string) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "profile", Value: "modern", Usage: "modern (PBES2 AES-256, SHA-256 MAC) or compat (3DES, SHA-1 MAC: macOS/iOS Keychain, Android, Windows 8.1 and older, Windows Server 2016 and older)"},
		&cli.StringFlag{Name: passwordFileFlag, Usage: "read the .p12 password from `FILE` (else $MINICA_P12_PASSWORD, --ask-password, or a generated one)"},
		&cli.BoolFlag{Name: "ask-password", Usage: "prompt for the .p12 password (no echo)"},
		&cli.StringFlag{Name: "password-out", Usage: "write a generated password to `FILE` (mode 0600) instead of stderr"},
	}
}

func exportP12Command(e *env) *cli.Command {
	return &cli.Command{
		Name:      "p12",
		Usage:     "bundle a certificate, its key and the CA chain into a password-protected .p12",
		ArgsUsage: "NAME|SERIAL|FILE",
		Description: "Writes ./NAME.p12 (or --out), mode 0600, then decodes it back and compares it with\n" +
			"the key and certificate before reporting success. The password comes from\n" +
			"--password-file, $MINICA_P12_PASSWORD or --ask-password; otherwise minica generates\n" +
			"one and prints it once on stderr (or writes it to --password-out).\n\n" +
			"Example:\n   minica export p12 simon\n   minica export p12 simon --profile compat --password-file pw.txt",
		Flags: append(p12OutFlags("password-file"),
			&cli.StringFlag{Name: "out", Usage: "write the bundle to `FILE` (default: ./NAME.p12)"},
			forceFlag(),
			&cli.StringFlag{Name: "key", Usage: "take the private key from `FILE`, for a certificate minica signed from a CSR"},
			&cli.StringFlag{Name: "key-password-file", Usage: "read the password of an encrypted --key from `FILE` (else $MINICA_KEY_PASSWORD or a prompt)"},
		),
		Action: func(c *cli.Context) error { return runExportP12(c, e) },
	}
}

func runExportP12(c *cli.Context, e *env) error {
	if err := wantArgs(c, 1, 1); err != nil {
		return err
	}
	if _, err := formats.ParseP12Profile(c.String("profile")); err != nil {
		return usagef(c, "--profile: %v", err)
	}
	authority, err := openCA(c, e)
	if err != nil {
		return err
	}
	defer authority.Close()
	rec, err := exportRecord(authority, c.Args().First(), e)
	if err != nil {
		return err
	}
	leaf, err := authority.LoadLeaf(rec)
	switch {
	case c.String("key") != "" && leaf != nil:
		in, err := readInput(c.String("key"))
		if err != nil {
			return err
		}
		if leaf.Key, err = e.inputKey(c, in, "key-password-file"); err != nil {
			return err
		}
	case errors.Is(err, ca.ErrNoKey):
		return withHint(err, "it was issued from a CSR; pass its key with --key FILE")
	case err != nil:
		return err
	}
	if err := formats.KeyMatchesCertificate(leaf.Key, leaf.Cert); err != nil {
		return fmt.Errorf("--key %s: %w", c.String("key"), err)
	}
	out, err := e.prepareP12(c, exportP12Flags, outName(c, "out", rec.Name+".p12"))
	if err != nil {
		return err
	}
	out.name = rec.Name
	return e.writeP12(out, leaf.Key, leaf.Cert, leaf.Chain)
}

// exportRecord picks the certificate to export: the newest valid one of a
// name, or the one a serial or certificate file names (ca.Target.NewestValid).
func exportRecord(authority *ca.CA, arg string, e *env) (*ca.Record, error) {
	t, err := authority.Resolve(arg)
	if err != nil {
		return nil, unknownNameHint(authority, err)
	}
	r, err := t.NewestValid(e.now())
	if err != nil {
		return nil, withHint(err, "issue a new one with 'minica issue'")
	}
	return r, nil
}

// p12Out is a .p12 about to be written: where, how, and its password.
type p12Out struct {
	profile   formats.P12Profile
	name      string // the key's friendlyName; "" is the certificate's CN
	path      string
	pwOut     string // where a generated password goes; "" is stderr
	force     bool
	password  string
	generated bool
	report    io.Writer // where "wrote ..." goes; nil is stdout
}

// p12Flags names the flags a command reads for its .p12 output; force is
// "" for a command whose --force means something else (issue), and out
// names the flag that chooses the bundle's file.
type p12Flags struct {
	profile, passwordFile, askPassword, passwordOut, force, out string
}

var exportP12Flags = p12Flags{"profile", "password-file", "ask-password", "password-out", "force", "out"}

// prepareP12 reads the flags of a .p12 output and checks them before
// anything is written: the profile, that the files do not exist (unless
// force), and the password.
func (e *env) prepareP12(c *cli.Context, f p12Flags, path string) (*p12Out, error) {
	profile, err := formats.ParseP12Profile(c.String(f.profile))
	if err != nil {
		return nil, usagef(c, "--%s: %v", f.profile, err)
	}
	o := &p12Out{profile: profile, path: path, pwOut: c.String(f.passwordOut), force: f.force != "" && c.Bool(f.force)}
	if o.pwOut == o.path {
		return nil, usagef(c, "--%s and the bundle name the same file %q", f.passwordOut, path)
	}
	if err := settleOutFiles(e, o.pwOut, o.path); err != nil {
		return nil, err
	}
	if !o.force {
		for _, out := range []struct{ path, what, flag string }{{o.path, "bundle", f.out}, {o.pwOut, "password", f.passwordOut}} {
			if _, err := os.Lstat(out.path); out.path != "" && err == nil {
				return nil, outExists(f, out.path, out.what, out.flag)
			}
		}
	}
	o.password, o.generated, err = e.newP12Password(c, f.passwordFile, f.askPassword)
	if err != nil {
		return nil, err
	}
	if o.pwOut != "" && !o.generated {
		return nil, usagef(c, "--%s writes a generated password; this one came from you", f.passwordOut)
	}
	return o, nil
}

// outExists is the error for an output file of a .p12 that exists, with a
// hint naming the flags that get past it: --force where the command has one
// for its files, else the flag that writes the file elsewhere.
func outExists(f p12Flags, path, what, flag string) error {
	err := fmt.Errorf("%s %w", path, errOutExists)
	if f.force != "" {
		return withHint(err, "pass --%s to replace it, or choose another output file", f.force)
	}
	return withHint(err, "write the %s elsewhere with --%s FILE, or remove %s first (issue's --force is about the name, not files)", what, flag, path)
}

// writeP12 encodes the bundle, writes it 0600 without overwriting (unless
// force), decodes the written file back and compares it, and only then
// reports success and a generated password.
func (e *env) writeP12(o *p12Out, key crypto.Signer, leaf *x509.Certificate, chain []*x509.Certificate) error {
	data, err := formats.P12Encoder{Profile: o.profile, Name: o.name}.Encode(key, leaf, chain, o.password)
	if err != nil {
		return err
	}
	// The password file takes its name first: a kill between the two
	// leaves at most a password without its bundle, never a bundle no
	// one can open, and the next run completes the pair.
	var files []outFile
	if o.pwOut != "" {
		files = append(files, outFile{o.pwOut, []byte(o.password + "\n"), 0o600})
	}
	files = append(files, outFile{o.path, data, 0o600})
	if err := writeOutFiles(files, o.force); err != nil {
		return err
	}
	if err := checkWrittenP12(o.path, o.password, key, leaf); err != nil {
		for _, f := range files {
			os.Remove(f.path)
		}
		return err
	}
	info, err := formats.P12EncryptionInfo(data)
	if err != nil {
		return err
	}
	report := o.report
	if report == nil {
		report = e.stdout
	}
	fmt.Fprintf(report, "wrote %s: key, certificate and %s (%s: %s)\n", o.path, countCA(len(chain)), o.profile, info)
	switch {
	case o.generated && o.pwOut == "":
		fmt.Fprintf(e.stderr, "minica: the password of %s (shown once): %s\n", o.path, o.password)
	case o.generated:
		fmt.Fprintf(report, "wrote its password to %s (mode 0600)\n", o.pwOut)
	}
	return nil
}

func checkWrittenP12(path, pw string, key crypto.Signer, leaf *x509.Certificate) error {
	written, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading back %q: %w", path, err)
	}
	if err := formats.CheckP12(written, pw, key, leaf); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func countCA(n int) string {
	if n == 1 {
		return "1 CA certificate"
	}
	return fmt.Sprintf("%d CA certificates", n)
}

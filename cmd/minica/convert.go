package main

import (
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"minica/formats"
)

func convertCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "convert",
		Usage:     "convert certificates, CSRs, CRLs, keys and .p12 bundles between formats",
		ArgsUsage: "FILE [FILE...]",
		Description: "Detects each input's format itself and says what it found (on stderr).\n\n" +
			"   --to pem|der       certificates, CSRs, CRLs, public and private keys (a key keeps\n" +
			"                      its format and encryption); a .p12 becomes PEM key + cert + chain\n" +
			"   --to pkcs8|sec1|pkcs1   change a private key's format (PEM; with --der, DER)\n" +
			"   --encrypt|--decrypt     add or strip a key's password (PKCS#8, PBES2 AES-256)\n" +
			"   --to p12           key + certificate (+ chain), from one bundle or several files\n\n" +
			"Private keys and .p12 files are only written to files (mode 0600), never to stdout;\n" +
			"other outputs go to stdout without --out. Nothing is overwritten without --force.\n\n" +
			"Example:\n   minica convert simon.p12 --to pem --out simon.pem\n" +
			"   minica convert simon.p12 --key-out simon.key --cert-out simon.crt --chain-out ca.pem\n" +
			"   minica convert cert.pem --to der --out cert.der\n   minica convert key.pem --decrypt --out key.plain.pem\n" +
			"   minica convert cert.pem key.pem --to p12 --out bundle.p12",
		Flags: append(p12OutFlags("new-password-file"),
			&cli.StringFlag{Name: "to", Usage: "pem, der, pkcs8, sec1, pkcs1 or p12"},
			&cli.BoolFlag{Name: "der", Usage: "with --to pkcs8|sec1|pkcs1 or --encrypt/--decrypt: write DER instead of PEM"},
			&cli.BoolFlag{Name: "encrypt", Usage: "encrypt a private key (PKCS#8 PBES2 AES-256) with a new password"},
			&cli.BoolFlag{Name: "decrypt", Usage: "write a private key without its password"},
			&cli.StringFlag{Name: "out", Usage: "write the result to `FILE`"},
			&cli.StringFlag{Name: "key-out", Usage: "from a .p12: write the key to `FILE` (mode 0600)"},
			&cli.StringFlag{Name: "cert-out", Usage: "from a .p12: write the certificate to `FILE`"},
			&cli.StringFlag{Name: "chain-out", Usage: "from a .p12: write the CA certificates to `FILE`"},
			forceFlag(),
			&cli.StringFlag{Name: "password-file", Usage: "read the password of an encrypted input from `FILE` (else $MINICA_KEY_PASSWORD / $MINICA_P12_PASSWORD or a prompt)"},
		),
		Action: func(c *cli.Context) error { return runConvert(c, e) },
	}
}

var convertP12Flags = p12Flags{"profile", "new-password-file", "ask-password", "password-out", "force", "out"}

// input is one file given on the command line, detected.
type input struct {
	path string
	obj  *formats.Object
}

// readInput reads and detects a file given on the command line.
func readInput(path string) (input, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return input{}, fmt.Errorf("reading %q: %w", path, err)
	}
	obj, err := formats.Detect(data)
	if err != nil {
		return input{}, fmt.Errorf("%s: %w", path, err)
	}
	return input{path, obj}, nil
}

func runConvert(c *cli.Context, e *env) error {
	if err := wantArgs(c, 1, 16); err != nil {
		return err
	}
	if c.Bool("encrypt") && c.Bool("decrypt") {
		return usagef(c, "--encrypt and --decrypt exclude each other")
	}
	var inputs []input
	for _, path := range c.Args().Slice() {
		in, err := readInput(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "minica: %s: %s\n", path, in.obj)
		inputs = append(inputs, in)
	}
	to := strings.ToLower(c.String("to"))
	if to == "p12" {
		return e.convertToP12(c, inputs)
	}
	if len(inputs) > 1 {
		return usagef(c, "several inputs only combine with --to p12")
	}
	in := inputs[0]
	switch in.obj.Kind {
	case formats.KindPKCS12:
		return e.convertFromP12(c, in, to)
	case formats.KindPrivateKey:
		return e.convertKey(c, in, to)
	case formats.KindBundle:
		return usagef(c, "%s holds a key and certificates: convert it --to p12", in.path)
	}
	if c.Bool("encrypt") || c.Bool("decrypt") {
		return usagef(c, "--encrypt and --decrypt apply to private keys, and %s is a %s", in.path, in.obj.Kind)
	}
	return e.reencode(c, in, to, 0o644, in.obj.Kind.String())
}

// reencode writes the input unchanged but for its encoding (--to, or the
// other one), described as what.
func (e *env) reencode(c *cli.Context, in input, to string, perm os.FileMode, what string) error {
	enc, err := targetEncoding(c, to, in.obj.Encoding)
	if err != nil {
		return err
	}
	out, err := formats.Reencode(in.obj, enc)
	if err != nil {
		return err
	}
	return e.emit(c, out, perm, fmt.Sprintf("%s %s", enc, what))
}

// targetEncoding reads --to pem|der; without it, the other encoding.
func targetEncoding(c *cli.Context, to string, from formats.Encoding) (formats.Encoding, error) {
	if to == "" {
		if from == formats.PEM {
			return formats.DER, nil
		}
		return formats.PEM, nil
	}
	enc, err := formats.ParseEncoding(to)
	if err != nil {
		return 0, usagef(c, "--to: %v", err)
	}
	return enc, nil
}

// emit writes a non-secret result to --out, or to stdout.
func (e *env) emit(c *cli.Context, data []byte, perm os.FileMode, what string) error {
	out := c.String("out")
	if out == "" {
		if perm != 0o644 {
			return usagef(c, "private keys are only written to files: pass --out FILE")
		}
		_, err := e.stdout.Write(data)
		return err
	}
	if err := writeOutFiles([]outFile{{out, data, perm}}, c.Bool("force")); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "wrote %s (%s)\n", out, what)
	return nil
}

// convertKey changes a private key's encoding, format or encryption.
func (e *env) convertKey(c *cli.Context, in input, to string) error {
	k := in.obj.Key
	encrypted := k.Format.Encrypted()
	switch {
	case !c.Bool("encrypt") && !c.Bool("decrypt") && (to == "" || to == "pem" || to == "der"):
		// Same key, other encoding: copied as is, encryption included.
		return e.reencode(c, in, to, 0o600, fmt.Sprintf("%s private key", k.Format))
	case encrypted && !c.Bool("decrypt") && !c.Bool("encrypt"):
		return withHint(fmt.Errorf("%s is encrypted", in.path), "pass --decrypt to write it without a password, or --encrypt to re-encrypt it")
	case !encrypted && c.Bool("decrypt"):
		return fmt.Errorf("%s is not encrypted", in.path)
	}
	format := formats.PKCS8
	if to != "" && to != "pem" && to != "der" {
		f, err := formats.ParseKeyFormat(to)
		if err != nil {
			return usagef(c, "--to: %v", err)
		}
		format = f
	}
	enc := formats.PEM
	if c.Bool("der") || to == "der" {
		enc = formats.DER
	}
	key, err := e.inputKey(c, in, "password-file")
	if err != nil {
		return err
	}
	var newPW []byte
	if c.Bool("encrypt") {
		if format != formats.PKCS8 {
			return usagef(c, "--encrypt writes PKCS#8; %s keys cannot be encrypted", format)
		}
		if newPW, err = e.newKeyPassword(c); err != nil {
			return err
		}
	}
	out, err := formats.EncodePrivateKey(key, format, enc, newPW)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("%s %s private key", enc, format)
	if len(newPW) > 0 {
		what = fmt.Sprintf("%s encrypted PKCS#8 private key", enc)
	}
	return e.emit(c, out, 0o600, what)
}

// inputKey returns the private key of an input (a key or a PEM bundle),
// asking for its password (--fileFlag, $MINICA_KEY_PASSWORD or a prompt)
// only when it is encrypted. Every key file named on the command line is
// read through it.
func (e *env) inputKey(c *cli.Context, in input, fileFlag string) (crypto.Signer, error) {
	var key crypto.Signer
	var pwErr error // from the password's source, returned as it is
	err := e.inputRetry(c, fileFlag, keyPasswordEnv, func() (err error) {
		key, err = in.obj.PrivateKey(func() ([]byte, error) {
			pw, err := e.inputPassword(c, fileFlag, keyPasswordEnv, "Key password")
			pwErr = err
			return pw, err
		})
		return err
	})
	switch {
	case pwErr != nil:
		return nil, pwErr
	case err != nil:
		return nil, passwordHint(c, in.path, err, fileFlag, keyPasswordEnv)
	}
	return key, nil
}

// newKeyPassword reads the password for --encrypt: --new-password-file,
// $MINICA_NEW_KEY_PASSWORD or a prompt; there is no generated one.
func (e *env) newKeyPassword(c *cli.Context) ([]byte, error) {
	if f := c.String("new-password-file"); f != "" {
		return readPasswordFile(f)
	}
	if v := os.Getenv("MINICA_NEW_KEY_PASSWORD"); v != "" {
		return []byte(v), nil
	}
	if !e.terminal() {
		return nil, withHint(errors.New("--encrypt needs a new password"), "pass --new-password-file FILE or set MINICA_NEW_KEY_PASSWORD")
	}
	return e.askNewPassword("New key password")
}

// convertFromP12 writes a bundle's key, certificate and chain as PEM: one
// file with --out, or separate ones with --key-out/--cert-out/--chain-out.
func (e *env) convertFromP12(c *cli.Context, in input, to string) error {
	if to != "" && to != "pem" {
		return usagef(c, "a .p12 converts --to pem (key, certificate and chain)")
	}
	split := c.String("key-out") != "" || c.String("cert-out") != "" || c.String("chain-out") != ""
	if !split && c.String("out") == "" {
		return usagef(c, "a .p12 holds a private key, which is only written to files: pass --out FILE or --key-out/--cert-out/--chain-out")
	}
	if split && c.String("out") != "" {
		return usagef(c, "--out writes one bundle; --key-out/--cert-out/--chain-out write separate files: choose one")
	}
	var key crypto.PrivateKey
	var leaf *x509.Certificate
	var chain []*x509.Certificate
	var pwErr error // from the password's source, returned as it is
	err := e.inputRetry(c, "password-file", p12PasswordEnv, func() error {
		pw, err := e.inputPassword(c, "password-file", p12PasswordEnv, "PKCS#12 password")
		if err != nil {
			pwErr = err
			return err
		}
		if len(pw) == 0 {
			pwErr = withHint(fmt.Errorf("%s: %w", in.path, errors.New("a PKCS#12 password is needed")), "pass --password-file FILE or set %s", p12PasswordEnv)
			return pwErr
		}
		key, leaf, chain, err = formats.DecodeP12(in.obj.PKCS12, string(pw))
		return err
	})
	switch {
	case pwErr != nil:
		return pwErr
	case err != nil:
		return passwordHint(c, in.path, err, "password-file", p12PasswordEnv)
	}
	if !split {
		data, err := formats.EncodeBundle(key, append([]*x509.Certificate{leaf}, chain...), nil)
		if err != nil {
			return err
		}
		return e.emit(c, data, 0o600, fmt.Sprintf("PEM private key, certificate and %s", countCA(len(chain))))
	}
	var files []outFile
	if f := c.String("key-out"); f != "" {
		data, err := formats.EncodePrivateKey(key, formats.PKCS8, formats.PEM, nil)
		if err != nil {
			return err
		}
		files = append(files, outFile{f, data, 0o600})
	}
	if f := c.String("cert-out"); f != "" {
		data, err := formats.EncodeCertificates([]*x509.Certificate{leaf}, formats.PEM)
		if err != nil {
			return err
		}
		files = append(files, outFile{f, data, 0o644})
	}
	if f := c.String("chain-out"); f != "" {
		if len(chain) == 0 {
			return fmt.Errorf("%s holds no CA certificate for --chain-out", in.path)
		}
		data, err := formats.EncodeCertificates(chain, formats.PEM)
		if err != nil {
			return err
		}
		files = append(files, outFile{f, data, 0o644})
	}
	if err := writeOutFiles(files, c.Bool("force")); err != nil {
		return err
	}
	for _, f := range files {
		fmt.Fprintf(e.stdout, "wrote %s\n", f.path)
	}
	return nil
}

// convertToP12 bundles one private key with certificates from the inputs:
// the certificate matching the key is the leaf, the others the chain, in
// the order given.
func (e *env) convertToP12(c *cli.Context, inputs []input) error {
	if _, err := formats.ParseP12Profile(c.String("profile")); err != nil {
		return usagef(c, "--profile: %v", err)
	}
	if c.String("out") == "" {
		return usagef(c, "--to p12 needs --out FILE")
	}
	var key crypto.Signer
	var err error
	var certs []*x509.Certificate
	for _, in := range inputs {
		switch in.obj.Kind {
		case formats.KindPrivateKey, formats.KindBundle:
			if key != nil {
				return usagef(c, "%s: a second private key; a .p12 holds one", in.path)
			}
			if key, err = e.inputKey(c, in, "password-file"); err != nil {
				return err
			}
			certs = append(certs, in.obj.Certificates...)
		case formats.KindCertificate:
			certs = append(certs, in.obj.Certificates...)
		default:
			return fmt.Errorf("%s: %w", in.path, &formats.KindError{Want: formats.KindCertificate, Found: "a " + in.obj.String()})
		}
	}
	if key == nil {
		return usagef(c, "--to p12 needs a private key among the inputs")
	}
	if len(certs) == 0 {
		return usagef(c, "--to p12 needs the certificate among the inputs")
	}
	leaf, chain, err := formats.SplitLeaf(key, certs)
	if err != nil {
		return err
	}
	out, err := e.prepareP12(c, convertP12Flags, c.String("out"))
	if err != nil {
		return err
	}
	return e.writeP12(out, key, leaf, chain)
}

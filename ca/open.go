package ca

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	filestore "minica/ca/store/file"
	"os"
	"runtime"
	"time"

	"minica/formats"
)

const (
	certFile  = "ca.crt"
	keyFile   = "ca.key"
	chainFile = "chain.pem"
)

// ErrNoCA is returned by Open when the directory holds no CA.
var ErrNoCA = errors.New("no CA found")

// CA is an opened CA directory. It is safe for use by one goroutine at a
// time; mutations must hold the directory lock (see Lock). Lookups (Record,
// RecordsByName, LoadLeaf) may also run in other goroutines meanwhile: only
// SetCRLURL and SetOCSPURL change the CA value, and every file is replaced
// by a rename or appended to, so a reader sees a state before or after.
type CA struct {
	dir *Dir
	// db is the issuance database: the CA directory's files or a store
	// of one of engines (see database); storeName names it as the
	// settings or OpenOptions did ("" or "file" for the files).
	db        database
	storeName string
	engines   []Engine
	// Cert is the issuing CA certificate.
	Cert *x509.Certificate
	// Chain is what is handed out after a leaf: the issuing CA certificate
	// and, for an intermediate, the certificates above it.
	Chain    []*x509.Certificate
	Settings Settings
	// Now is the clock; tests inject a fixed time.
	Now func() time.Time
	// keyURI is the CA key's URI when the key is in a PKCS#11 token, and
	// tokens the signers LoadSigner made of it (their sessions closed by
	// Close: a signer stays usable until then).
	keyURI *KeyURI
	tokens []*tokenSigner
	// serving is serve.lock, held shared while the handle is a running
	// serve's (see HoldServing).
	serving *os.File
	// wrapLog, when set, wraps the revocation log for appends: tests
	// inject failing writes through it.
	wrapLog func(filestore.LogFile) filestore.LogFile
	// crashAfter, set only by tests, is called after each file PublishCRL
	// writes; an error stops PublishCRL there, leaving the disk as a kill
	// at that point would.
	crashAfter func(file string) error
	// syncEach, set only by tests and benchmarks, makes IssueBatch fsync
	// file by file where it would sync the whole file system.
	syncEach bool
	// noSync, set only by the floor benchmark, makes IssueBatch skip its
	// syncs: what the guarantees cost is the difference.
	noSync bool
}

// Open opens the CA in directory dir and checks its certificate, chain and
// settings; its database is the store the settings name (see OpenWith).
// The key is loaded separately, by LoadSigner.
func Open(dir string) (*CA, error) { return OpenWith(dir, OpenOptions{}) }

// openDir is Open without connecting to the store of the settings.
func openDir(dir string) (*CA, error) {
	d, err := OpenDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w in %q", ErrNoCA, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("opening CA directory %q: %w", dir, err)
	}
	c := &CA{dir: d, Now: time.Now}
	if err := c.load(); err != nil {
		d.Close()
		return nil, err
	}
	c.db = c.fileStore()
	return c, nil
}

func (c *CA) load() error {
	data, err := c.dir.ReadFile(certFile)
	if errors.Is(err, fs.ErrNotExist) {
		if _, perr := c.dir.Stat(pendingCSRFile); perr == nil {
			return fmt.Errorf("%w in %q: import it with 'minica init --intermediate --import CERT --root-crl FILE'", ErrPending, c.dir.Path())
		}
		return fmt.Errorf("%w in %q (no %s)", ErrNoCA, c.dir.Path(), certFile)
	}
	if err != nil {
		return fmt.Errorf("reading CA certificate %q: %w", c.dir.Join(certFile), err)
	}
	certs, err := parseCertsPEM(data)
	if err != nil || len(certs) != 1 {
		return fmt.Errorf("corrupt CA certificate %q: want one PEM certificate", c.dir.Join(certFile))
	}
	c.Cert = certs[0]
	if !c.Cert.IsCA || c.Cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return fmt.Errorf("corrupt CA certificate %q: not a CA certificate", c.dir.Join(certFile))
	}
	if data, err = c.dir.ReadFile(chainFile); err != nil {
		return fmt.Errorf("reading CA chain %q: %w", c.dir.Join(chainFile), err)
	}
	if c.Chain, err = parseCertsPEM(data); err != nil || len(c.Chain) == 0 || !c.Chain[0].Equal(c.Cert) {
		return fmt.Errorf("corrupt CA chain %q: want PEM certificates starting with %s", c.dir.Join(chainFile), certFile)
	}
	if data, err = c.dir.ReadFile(settingsFile); err != nil {
		return fmt.Errorf("reading CA settings %q: %w", c.dir.Join(settingsFile), err)
	}
	if c.Settings, err = parseSettings(data); err != nil {
		return fmt.Errorf("corrupt CA settings %q: %w", c.dir.Join(settingsFile), err)
	}
	if err := c.checkHierarchy(); err != nil {
		return err
	}
	return c.loadKeyURI()
}

// parseCertsPEM decodes every CERTIFICATE block of data; anything else in it
// is an error.
func parseCertsPEM(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("unexpected PEM block %q", block.Type)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		certs = append(certs, cert)
	}
	if len(bytes.TrimSpace(data)) > 0 {
		return nil, errors.New("trailing data after the last PEM block")
	}
	return certs, nil
}

// Replaced reports whether the CA directory at c's path is no longer the
// one c opened (see Dir.Replaced): a long-running reader then opens the CA
// again by its path, as c goes on reading the old one.
func (c *CA) Replaced() bool { return c.dir.Replaced() }

// Close releases the directory, and the token session of a PKCS#11 key.
func (c *CA) Close() error {
	for _, t := range c.tokens {
		t.close()
	}
	c.tokens = nil
	c.releaseServing()
	if c.db != nil {
		c.db.Close()
		c.db = nil
	}
	return c.dir.Close()
}

// Dir returns the CA directory.
func (c *CA) Dir() *Dir { return c.dir }

// Path returns the absolute-or-relative path of a file inside the CA
// directory, as given to Open, for messages and output.
func (c *CA) Path(name string) string { return c.dir.Join(name) }

// CertFile returns the path of the CA certificate file.
func (c *CA) CertFile() string { return c.dir.Join(certFile) }

// KeyEncrypted reports whether the CA key is password-protected, so that
// callers ask for a password only when one is needed. A key in a PKCS#11
// token (see KeyURI) is not: its PIN is asked for instead.
func (c *CA) KeyEncrypted() (bool, error) {
	if c.keyURI != nil {
		return false, nil
	}
	data, err := c.readKeyFile()
	if err != nil {
		return false, err
	}
	block, _ := pem.Decode(data)
	return block != nil && block.Type == "ENCRYPTED PRIVATE KEY", nil
}

func (c *CA) readKeyFile() ([]byte, error) {
	info, err := c.dir.Stat(keyFile)
	if err != nil {
		return nil, fmt.Errorf("reading CA key %q: %w", c.dir.Join(keyFile), err)
	}
	// Windows has no Unix modes (Go reports 0666 or 0444 there): the
	// directory's ACL protects the key, so the check is Unix-only.
	if perm := info.Mode().Perm(); perm&0o077 != 0 && runtime.GOOS != "windows" {
		return nil, fmt.Errorf("CA key %q has mode %04o: group and others must have no access (chmod 600 it)", c.dir.Join(keyFile), perm)
	}
	data, err := c.dir.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("reading CA key %q: %w", c.dir.Join(keyFile), err)
	}
	return data, nil
}

// LoadSigner loads the CA key, decrypting it with password when it is
// encrypted, and checks that it matches the CA certificate. A wrong password
// gives an error matching formats.ErrWrongPassword; an encrypted key and no
// password, formats.ErrPasswordRequired. The key file must not be readable by
// group or others. For a key in a PKCS#11 token (KeyURI is set), password
// is the token's PIN, and the errors are those of tokenkey.go (ErrWrongPIN,
// ErrKeyNotFound, ...); the session stays open until Close.
//
// This is the one place where a signing command gets the CA key: issuing,
// signing CSRs and intermediates, revoking, CRLs and serve's OCSP and CRL
// re-signing all take the crypto.Signer it returns, whether the key is in
// a file or a token.
func (c *CA) LoadSigner(password []byte) (crypto.Signer, error) {
	if c.keyURI != nil {
		return c.loadTokenSigner(password)
	}
	data, err := c.readKeyFile()
	if err != nil {
		return nil, err
	}
	key, err := formats.ParsePrivateKeyPEM(data, password)
	if errors.Is(err, formats.ErrWrongPassword) || errors.Is(err, formats.ErrPasswordRequired) {
		return nil, fmt.Errorf("CA key %q: %w", c.dir.Join(keyFile), err)
	}
	if err != nil {
		return nil, fmt.Errorf("corrupt CA key %q: %w", c.dir.Join(keyFile), err)
	}
	if !publicKeysEqual(key.Public(), c.Cert.PublicKey) {
		return nil, fmt.Errorf("CA key %q does not match the CA certificate %q", c.dir.Join(keyFile), c.dir.Join(certFile))
	}
	return key, nil
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	eq, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && eq.Equal(b)
}

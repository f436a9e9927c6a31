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
	"time"
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
	// tokens the signers OpenSigner made of it (their sessions closed by
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
// The key is opened separately, by OpenSigner.
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
			return fmt.Errorf("%w in %q", ErrPending, c.dir.Path())
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
	// c.db stays set: a goroutine that outlived its use of c (serve's
	// watcher) may still read the field, and an engine's Close may run
	// twice.
	c.db.Close()
	return c.dir.Close()
}

// Dir returns the CA directory.
func (c *CA) Dir() *Dir { return c.dir }

// Path returns the absolute-or-relative path of a file inside the CA
// directory, as given to Open, for messages and output.
func (c *CA) Path(name string) string { return c.dir.Join(name) }

// CertFile returns the path of the CA certificate file.
func (c *CA) CertFile() string { return c.dir.Join(certFile) }

func publicKeysEqual(a, b crypto.PublicKey) bool {
	eq, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && eq.Equal(b)
}

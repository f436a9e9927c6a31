package ca

import (
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"path"
	"sync"
	"syscall"
	"time"

	"minica/formats"
)

// ErrNameTaken is returned by Issue when the name already has a certificate
// that is neither revoked nor expired, and Force is not set.
var ErrNameTaken = errors.New("name already has a valid certificate")

// ErrOutlivesCA is returned by Issue when the leaf would expire after the CA.
var ErrOutlivesCA = errors.New("certificate would outlive the CA")

// ErrIssuanceIncomplete is matched by the error of an issuance that signed
// a certificate and wrote it durably, but could not complete what goes
// with it: its record (left pending), its name's current.* links or its
// predecessor's renewal link. Check completes them.
var ErrIssuanceIncomplete = errors.New("issuance left incomplete")

// Issued is the result of Issue.
type Issued struct {
	Record *Record
	Cert   *x509.Certificate
	// Key is the generated private key, nil when the request carried a
	// public key.
	Key crypto.Signer
	// CertFile, KeyFile and ChainFile are the paths written; KeyFile is
	// empty when no key was generated.
	CertFile, KeyFile, ChainFile string
}

// Issue signs a leaf certificate for req with signer (the CA key) and
// records it. The caller must hold the lock (see Lock).
//
// Everything in req is validated before a key is generated or a file is
// written; on a validation error nothing changes. The serial is reserved in
// the database before signing, so a certificate never exists on disk without
// a record. The certificate is valid from Now()-Backdate (not before the
// CA's notBefore) for req.Validity, the backdate included, and never beyond
// the CA's notAfter; a req.Validity under MinValidity, which would end
// before now, is refused (ErrValidityTooShort). A name outside the CA's name constraints is refused
// (see checkNameConstraints).
func (c *CA) Issue(signer crypto.Signer, req Request) (*Issued, error) {
	p, err := c.prepare(req)
	if err != nil {
		return nil, err
	}
	tmpl, pub, key, now := p.tmpl, p.pub, p.key, p.now
	rec, res, err := c.reserveSerial(req, now)
	if err != nil {
		return nil, err
	}
	defer res.Release()
	tmpl.SerialNumber, _ = ParseSerial(rec.Serial)
	// A new certs/NAME is created while the certificate is signed.
	files := c.startCertFiles(rec)
	cert, err := c.sign(tmpl, pub, signer)
	if err != nil {
		files.close()
		return nil, c.void(rec, err)
	}
	if err := files.finish(cert, key); err != nil {
		return nil, c.void(rec, err)
	}
	fillRecord(rec, cert)
	if err := c.db.Complete(res, rec); err != nil {
		return nil, fmt.Errorf("%w: serial %s is signed, but completing its record failed: %w", ErrIssuanceIncomplete, rec.Serial, err)
	}
	if req.acmeAccount == "" { // an ACME certificate moves no links (see Current)
		if err := c.linkCurrent(rec); err != nil {
			return nil, fmt.Errorf("%w: serial %s is issued and recorded, but not yet the current certificate of its name: %w", ErrIssuanceIncomplete, rec.Serial, err)
		}
	}
	return c.issuedOf(rec, cert, key), nil
}

// issuedOf is the Issued of a durable, recorded certificate and its key
// (nil when minica holds none).
func (c *CA) issuedOf(rec *Record, cert *x509.Certificate, key crypto.Signer) *Issued {
	out := &Issued{Record: rec, Cert: cert, Key: key, CertFile: c.dir.Join(rec.CertPath()), ChainFile: c.dir.Join(rec.ChainPath())}
	if key != nil {
		out.KeyFile = c.dir.Join(rec.KeyPath())
	}
	return out
}

// prepared is a request that passed every check of Issue: its template
// (without a serial) and its key, ready for a serial to be reserved.
type prepared struct {
	now  time.Time
	tmpl *x509.Certificate
	pub  crypto.PublicKey
	key  crypto.Signer // nil when the request brought its public key
}

// prepare validates req as Issue does before it writes anything: a root
// issues no leaves, the fields, the validity against the CA's, the name
// (free unless req.Force), the name constraints of every CA of the chain.
// It generates the key when req asks for one.
func (c *CA) prepare(req Request) (*prepared, error) {
	if c.IsRoot() {
		return nil, ErrRootCA
	}
	uris, err := req.normalize(c.Settings)
	if err != nil {
		return nil, err
	}
	now := c.Now().UTC().Truncate(time.Second)
	notBefore, notAfter, err := c.validity(now, req.Validity)
	if err != nil {
		return nil, err
	}
	if err := c.checkNameFree(req.Name, now, req.Force); err != nil {
		return nil, err
	}
	if err := c.checkCertDir(req.Name); err != nil {
		return nil, err
	}
	pub, key, err := req.key()
	if err != nil {
		return nil, err
	}
	tmpl, err := req.template(nil, pub, uris, notBefore, notAfter, c.Settings)
	if err != nil {
		return nil, err
	}
	fitServerCommonName(c.Cert, tmpl)
	if err := c.checkChainConstraints(tmpl); err != nil {
		return nil, err
	}
	return &prepared{now: now, tmpl: tmpl, pub: pub, key: key}, nil
}

// sign signs tmpl for pub with the CA key and parses the result.
func (c *CA) sign(tmpl *x509.Certificate, pub crypto.PublicKey, signer crypto.Signer) (*x509.Certificate, error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.Cert, pub, signer)
	if err != nil {
		return nil, fmt.Errorf("signing certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing signed certificate: %w", err)
	}
	return cert, nil
}

// validity computes a leaf's notBefore and notAfter at time now.
func (c *CA) validity(now time.Time, lifetime time.Duration) (time.Time, time.Time, error) {
	if now.Before(c.Cert.NotBefore) {
		return time.Time{}, time.Time{}, fmt.Errorf("the system clock (%s) is before the CA's notBefore (%s): check the clock", now.Format(time.RFC3339), c.Cert.NotBefore.UTC().Format(time.RFC3339))
	}
	notBefore, notAfter, err := leafValidity(now, lifetime)
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	if notBefore.Before(c.Cert.NotBefore) {
		notBefore, notAfter = c.Cert.NotBefore, c.Cert.NotBefore.Add(lifetime)
	}
	if notAfter.After(c.Cert.NotAfter) {
		return time.Time{}, time.Time{}, fmt.Errorf("%w: validity %s would end on %s, after the CA certificate expires on %s",
			ErrOutlivesCA, FormatDuration(lifetime), notAfter.Format(time.RFC3339), c.Cert.NotAfter.UTC().Format(time.RFC3339))
	}
	return notBefore, notAfter, nil
}

// NameTakenError names the certificate that holds a name.
type NameTakenError struct {
	Name   string
	Serial string
}

func (e *NameTakenError) Error() string {
	return fmt.Sprintf("a certificate named %q already exists (serial %s)", e.Name, e.Serial)
}

// Unwrap makes errors.Is(err, ErrNameTaken) true.
func (e *NameTakenError) Unwrap() error { return ErrNameTaken }

func (c *CA) checkNameFree(name string, now time.Time, force bool) error {
	if force {
		return nil
	}
	recs, err := c.RecordsByName(name)
	if err != nil {
		return err
	}
	for _, r := range recs {
		if r.StatusAt(now) == StatusValid {
			return &NameTakenError{Name: name, Serial: r.Serial}
		}
	}
	return nil
}

// checkCertDir fails when certs/NAME exists but is not a directory, so that
// the issuance stops before it reserves a serial.
func (c *CA) checkCertDir(name string) error {
	info, err := c.dir.Root().Lstat(certDir(name))
	if err == nil && !info.IsDir() {
		return fmt.Errorf("opening %q: %w", c.dir.Join(certDir(name)), syscall.ENOTDIR)
	}
	return nil
}

// key returns the public key to certify and, when minica generates it, the
// private key.
func (r *Request) key() (crypto.PublicKey, crypto.Signer, error) {
	if r.PublicKey != nil {
		return r.PublicKey, nil, CheckPublicKey(r.PublicKey)
	}
	if r.reuseKey != nil {
		return r.reuseKey.Public(), r.reuseKey, nil
	}
	key, err := r.KeyType.Generate()
	if err != nil {
		return nil, nil, err
	}
	return key.Public(), key, nil
}

// reserveSerial picks a random serial and reserves its pending record in
// the store. The reservation is completed once the certificate is on disk.
func (c *CA) reserveSerial(req Request, now time.Time) (*Record, reservation, error) {
	pending := func(_ int, serial *big.Int) *Record { return pendingRecord(req, now, serial) }
	recs, res, err := reserveDrawn(1, pending, func(rs []*Record) ([]reservation, error) {
		r, err := c.db.Reserve(rs[0])
		return []reservation{r}, err
	})
	if err != nil {
		return nil, nil, err
	}
	return recs[0], res[0], nil
}

// reserveDrawn draws a random serial for each of n pending records (made
// by pending) and has reserve reserve them, drawing them all again on the
// (astronomically unlikely) collision.
func reserveDrawn(n int, pending func(i int, serial *big.Int) *Record, reserve func([]*Record) ([]reservation, error)) ([]*Record, []reservation, error) {
	recs := make([]*Record, n)
	for range 8 {
		for i := range recs {
			serial, err := randomSerial()
			if err != nil {
				return nil, nil, err
			}
			recs[i] = pending(i, serial)
		}
		res, err := reserve(recs)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("reserving serial: %w", err)
		}
		return recs, res, nil
	}
	return nil, nil, errors.New("reserving serial: 8 random serials in a row were taken")
}

// pendingRecord is the record that reserves serial n for req.
func pendingRecord(req Request, now time.Time, n *big.Int) *Record {
	return &Record{
		Serial:      SerialHex(n),
		Name:        req.Name,
		Profile:     req.Profile,
		Status:      StatusPending,
		HasKey:      req.PublicKey == nil,
		IssuedAt:    now,
		RenewalOf:   req.RenewalOf,
		ACMEAccount: req.acmeAccount,
		Device:      req.Device,
	}
}

// void marks a reserved serial as never used and returns cause.
func (c *CA) void(rec *Record, cause error) error {
	rec.Status = StatusVoid
	if err := c.putRecord(rec); err != nil {
		return errors.Join(cause, fmt.Errorf("voiding reserved serial %s: %w", rec.Serial, err))
	}
	return cause
}

// certFiles writes the files of a new certificate into certs/NAME. They
// are new (their names hold the serial), so they are created in place with
// O_EXCL: every temporary file costs an inode allocation, the largest share
// of an issuance's CPU. The key, the chain and the certificate are written
// in that order, so a killed process never leaves a certificate without its
// key, and then synced together with their directory, so that the disk's
// cache flushes overlap instead of queueing. Check finishes a pending
// record whose certificate reached the disk whole (reporting it when a
// power loss kept the certificate but not the key), and voids the others,
// removing their files.
type certFiles struct {
	c           *CA
	rec         *Record
	opened      chan struct{} // closed once certs/NAME is open, or failed to
	err         error         // why it failed, once opened is closed
	dir         *Dir          // certs/NAME
	certsSynced func() error  // waits for certs/ to be synced
}

// startCertFiles opens certs/NAME in the background, creating it (and
// syncing certs/) when the name is new.
func (c *CA) startCertFiles(rec *Record) *certFiles {
	f := &certFiles{c: c, rec: rec, opened: make(chan struct{})}
	go func() {
		defer close(f.opened)
		f.dir, f.certsSynced, f.err = c.makeCertDir(rec.Name)
	}()
	return f
}

// finish writes the key (when there is one), the chain and the certificate
// and syncs them, and waits for certs/ to be synced; files that fail to
// reach the disk are removed. It closes the directory.
func (f *certFiles) finish(cert *x509.Certificate, key crypto.Signer) error {
	defer f.close()
	var files []NewFile
	if key != nil {
		keyPEM, err := formats.MarshalPrivateKeyPEM(key, nil)
		if err != nil {
			return err
		}
		files = append(files, NewFile{Name: path.Base(f.rec.KeyPath()), Data: keyPEM, Perm: 0o600})
	}
	files = append(files,
		NewFile{Name: path.Base(f.rec.ChainPath()), Data: f.c.chainPEM(cert), Perm: 0o644},
		NewFile{Name: path.Base(f.rec.CertPath()), Data: pemCert(cert), Perm: 0o644})
	<-f.opened
	if f.err != nil {
		return f.err
	}
	if err := f.dir.CreateNewSynced(files...); err != nil {
		return err
	}
	return f.certsSynced()
}

// close waits for the background work and releases the directory.
func (f *certFiles) close() {
	<-f.opened
	if f.dir != nil {
		f.certsSynced() // the sync runs on the CA directory: wait for it
		f.dir.Close()
	}
}

// makeCertDir opens certs/NAME. When it creates it, it starts syncing
// certs/, so that the new entry survives a power loss, and the function it
// returns waits for that sync; otherwise the function returns nil at once.
func (c *CA) makeCertDir(name string) (*Dir, func() error, error) {
	dir, created, err := c.dir.MkdirSub(certDir(name))
	if err != nil {
		return nil, nil, err
	}
	if !created {
		return dir, func() error { return nil }, nil
	}
	synced := make(chan error, 1)
	go func() { synced <- c.dir.SyncDir("certs") }()
	return dir, sync.OnceValue(func() error { return <-synced }), nil
}

func pemCert(cert *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
}

// chainPEM returns a leaf followed by the CA chain, PEM-encoded, without
// the root of a hierarchy (see leafChain).
func (c *CA) chainPEM(leaf *x509.Certificate) []byte {
	out := pemCert(leaf)
	for _, ca := range c.LeafChain() {
		out = append(out, pemCert(ca)...)
	}
	return out
}

// fillRecord copies a signed certificate's facts into its record and marks
// it valid.
func fillRecord(rec *Record, cert *x509.Certificate) {
	sum := sha256.Sum256(cert.Raw)
	rec.Status = StatusValid
	rec.Subject, _ = formats.DistinguishedName(cert.RawSubject) // parsed by x509 already
	rec.SANs = SANs(cert)
	rec.NotBefore = cert.NotBefore.UTC()
	rec.NotAfter = cert.NotAfter.UTC()
	rec.Fingerprint = hex.EncodeToString(sum[:])
}

// SANs lists a certificate's subject alternative names as "dns:…", "ip:…",
// "email:…" and "uri:…".
func SANs(cert *x509.Certificate) []string {
	var sans []string
	for _, d := range cert.DNSNames {
		sans = append(sans, "dns:"+d)
	}
	for _, ip := range cert.IPAddresses {
		sans = append(sans, "ip:"+ip.String())
	}
	for _, e := range cert.EmailAddresses {
		sans = append(sans, "email:"+e)
	}
	for _, u := range cert.URIs {
		sans = append(sans, "uri:"+u.String())
	}
	return sans
}

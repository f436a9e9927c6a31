package ca

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	filestore "minica/ca/store/file"
	"net"
	"os"
	"time"

	"minica/ca/store"
	"minica/formats"
	"minica/revoke"
)

// Role is a CA's place in a hierarchy, kept in settings.json. A CA made by
// a plain init has none: it is a self-signed CA that issues leaves itself.
type Role string

// The roles.
const (
	// RoleRoot: a self-signed root that signs only intermediate CAs (see
	// SignIntermediate) and its own CRLs, kept offline.
	RoleRoot Role = "root"
	// RoleIntermediate: a CA whose certificate a root signed; it issues
	// the leaves, and its directory keeps the root's certificate and CRL.
	RoleIntermediate Role = "intermediate"
)

// Defaults of a hierarchy. A root comes online rarely: it lives long and
// its CRL is valid for a year, so that it is signed once a year or when an
// intermediate is revoked. An intermediate lives shorter than its root, so
// that it can be rotated under it (see docs/hierarchy.md).
const (
	DefaultRootValidity         = 20 * 365 * 24 * time.Hour
	DefaultIntermediateValidity = 5 * 365 * 24 * time.Hour
	DefaultRootCRLLifetime      = 365 * 24 * time.Hour
	// DefaultRootPathLen lets a root certify intermediates that certify
	// only leaves.
	DefaultRootPathLen = 1
)

// Intermediate is the profile of the intermediate CA certificates a root
// signs, as their records name it.
const Intermediate Profile = "intermediate"

// Files of a hierarchy, relative to the CA directory.
const (
	// pendingCSRFile marks an intermediate waiting for its certificate:
	// its key and this CSR exist, ca.crt does not yet.
	pendingCSRFile = "intermediate.csr"
	// pendingFile holds the name constraints asked for with the CSR, which
	// the certificate must carry (see ImportIntermediate).
	pendingFile = "intermediate.json"
	// RootCertFile is the root's certificate in an intermediate's
	// directory, the trust anchor of its chain.
	RootCertFile = "root.crt"
	// RootCRLPEMFile and RootCRLDERFile are the root's current CRL in an
	// intermediate's directory, as imported (see ImportRootCRL).
	RootCRLPEMFile = "root-crl.pem"
	RootCRLDERFile = "root-crl.der"
)

// ErrRootCA is returned by Issue on a root CA: a root certifies only
// intermediates (see SignIntermediate).
var ErrRootCA = errors.New("a root CA signs only intermediate CAs and its own CRLs")

// ErrNotRoot is returned by SignIntermediate on a CA that is not a root.
var ErrNotRoot = errors.New("only a root CA signs intermediate CAs")

// ErrPending is returned by Open for an intermediate CA whose certificate
// has not been imported yet.
var ErrPending = errors.New("the intermediate CA waits for its certificate")

// ErrNoPending is returned, with ErrNoCA, by OpenPending and
// ImportIntermediate for a directory without a pending intermediate.
var ErrNoPending = errors.New("no pending intermediate")

// ErrNoRootCRL is returned by LoadRootCRL when an intermediate holds no
// CRL of its root.
var ErrNoRootCRL = errors.New("no CRL of the root CA")

func (o *InitOptions) rootDefaults() {
	if o.Validity == 0 {
		o.Validity = DefaultRootValidity
	}
	if o.MaxPathLen == 0 {
		o.MaxPathLen = DefaultRootPathLen
	}
	o.Settings.Role = RoleRoot
	if o.Settings.CRLLifetime == Duration(DefaultCRLLifetime) {
		o.Settings.CRLLifetime = Duration(DefaultRootCRLLifetime)
	}
}

// checkHierarchy refuses an intermediate whose chain.pem is not its
// certificate followed by the root that signed it, as root.crt holds it.
func (c *CA) checkHierarchy() error {
	if !c.IsIntermediate() {
		return nil
	}
	bad := func(why string) error {
		return fmt.Errorf("corrupt CA chain %q: %s", c.dir.Join(chainFile), why)
	}
	if len(c.Chain) != 2 {
		return bad(fmt.Sprintf("an intermediate's chain is its certificate and the root's, not %d certificates", len(c.Chain)))
	}
	if c.Cert.CheckSignatureFrom(c.Chain[1]) != nil {
		return bad("the second certificate did not sign the CA certificate")
	}
	data, err := c.dir.ReadFile(RootCertFile)
	if err != nil {
		return fmt.Errorf("reading the root certificate %q: %w", c.dir.Join(RootCertFile), err)
	}
	if roots, err := parseCertsPEM(data); err != nil || len(roots) != 1 || !roots[0].Equal(c.Chain[1]) {
		return bad(fmt.Sprintf("its root is not the one of %s", RootCertFile))
	}
	return nil
}

// IsRoot reports whether c is the root of a hierarchy.
func (c *CA) IsRoot() bool { return c.Settings.Role == RoleRoot }

// IsIntermediate reports whether c is an intermediate of a hierarchy.
func (c *CA) IsIntermediate() bool { return c.Settings.Role == RoleIntermediate }

// Root returns the root of c's chain: the last certificate of Chain.
func (c *CA) Root() *x509.Certificate { return c.Chain[len(c.Chain)-1] }

// checkChainConstraints refuses a leaf template with a name outside the
// name constraints of any CA of c's chain (see checkNameConstraints), the
// issuing CA's first; a refusal by a CA above it names that CA. Every path
// that signs a leaf calls it.
func (c *CA) checkChainConstraints(tmpl *x509.Certificate) error {
	for _, ca := range c.Chain {
		if err := checkNameConstraints(ca, tmpl); err != nil {
			if !ca.Equal(c.Cert) {
				err = fmt.Errorf("%w (a constraint of %q)", err, ca.Subject.CommonName)
			}
			return err
		}
	}
	return nil
}

// LeafChain is what follows a leaf in its chain file: the CA chain without
// a root above the issuing CA, which relying parties hold as their trust
// anchor. A single self-signed CA stays, as minica always wrote it.
func (c *CA) LeafChain() []*x509.Certificate {
	if len(c.Chain) > 1 {
		return c.Chain[:len(c.Chain)-1]
	}
	return c.Chain
}

// IntermediateRequest asks a root for an intermediate CA certificate.
type IntermediateRequest struct {
	// Name is the intermediate's name in the root's database, for revoke.
	Name string
	// CSR is the intermediate's request, its signature checked. Only its
	// public key and subject are used.
	CSR *x509.CertificateRequest
	// Validity is the lifetime; 0 means DefaultIntermediateValidity. It
	// must end before the root does.
	Validity    time.Duration
	Constraints Constraints
	// Force signs a second certificate under a name that has a valid one.
	Force bool
}

// SignIntermediate signs an intermediate CA certificate for r with signer
// (the root key) and records it, as Issue records a leaf, so that it can
// be revoked. The caller must hold the lock.
//
// The certificate is CA:TRUE pathLen 0, keyCertSign|cRLSign, with the
// root's CRL distribution point and OCSP URL when set, and r.Constraints
// as critical name constraints. A validity beyond the root's is refused,
// naming both dates.
func (c *CA) SignIntermediate(signer crypto.Signer, r IntermediateRequest) (*Issued, error) {
	if !c.IsRoot() {
		return nil, ErrNotRoot
	}
	if err := ValidateName(r.Name); err != nil {
		return nil, err
	}
	if r.CSR == nil {
		return nil, errors.New("signing intermediate: a CSR is required")
	}
	if err := CheckPublicKey(r.CSR.PublicKey); err != nil {
		return nil, err
	}
	if err := r.Constraints.Validate(); err != nil {
		return nil, err
	}
	subject, err := intermediateSubject(r.CSR.Subject)
	if err != nil {
		return nil, err
	}
	if r.Validity == 0 {
		r.Validity = DefaultIntermediateValidity
	}
	now := c.Now().UTC().Truncate(time.Second)
	notBefore, notAfter, err := c.validity(now, r.Validity)
	if err != nil {
		return nil, err
	}
	if err := c.checkNameFree(r.Name, now, r.Force); err != nil {
		return nil, err
	}
	if err := c.checkCertDir(r.Name); err != nil {
		return nil, err
	}
	ski, err := subjectKeyID(r.CSR.PublicKey)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		Subject:               subject,
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
		SubjectKeyId:          ski,
	}
	if c.Settings.CRLURL != "" {
		tmpl.CRLDistributionPoints = []string{c.Settings.CRLURL}
	}
	if c.Settings.OCSPURL != "" {
		tmpl.OCSPServer = []string{c.Settings.OCSPURL}
	}
	setNameConstraints(tmpl, r.Constraints)
	rec, res, err := c.reserveSerial(Request{Name: r.Name, Profile: Intermediate, PublicKey: r.CSR.PublicKey}, now)
	if err != nil {
		return nil, err
	}
	defer res.Release()
	tmpl.SerialNumber, _ = ParseSerial(rec.Serial)
	files := c.startCertFiles(rec)
	cert, err := c.sign(tmpl, r.CSR.PublicKey, signer)
	if err != nil {
		files.close()
		return nil, c.void(rec, err)
	}
	if err := files.finish(cert, nil); err != nil {
		return nil, c.void(rec, err)
	}
	fillRecord(rec, cert)
	if err := c.db.Complete(res, rec); err != nil {
		return nil, fmt.Errorf("%w: serial %s is signed, but completing its record failed: %w", ErrIssuanceIncomplete, rec.Serial, err)
	}
	if err := c.linkCurrent(rec); err != nil {
		return nil, fmt.Errorf("%w: serial %s is signed and recorded, but not yet the current certificate of its name: %w", ErrIssuanceIncomplete, rec.Serial, err)
	}
	return &Issued{Record: rec, Cert: cert, CertFile: c.dir.Join(rec.CertPath()), ChainFile: c.dir.Join(rec.ChainPath())}, nil
}

// intermediateSubject takes the attributes of a CSR's subject that an
// intermediate certificate gets, validated: CN (required), O, OU, C, ST, L.
func intermediateSubject(s pkix.Name) (pkix.Name, error) {
	o := InitOptions{CommonName: s.CommonName}
	for _, f := range []struct {
		dst *string
		src []string
	}{{&o.Organization, s.Organization}, {&o.OrganizationalUnit, s.OrganizationalUnit}, {&o.Country, s.Country}, {&o.Province, s.Province}, {&o.Locality, s.Locality}} {
		if len(f.src) > 1 {
			return pkix.Name{}, fmt.Errorf("the CSR's subject has %d values of one attribute (%q): minica signs one of each", len(f.src), f.src)
		}
		if len(f.src) == 1 {
			*f.dst = f.src[0]
		}
	}
	if o.CommonName == "" {
		return pkix.Name{}, errors.New("the CSR has no common name: an intermediate CA needs one")
	}
	return o.subject()
}

// Pending is an intermediate CA waiting for its certificate.
type Pending struct {
	// CSR is the request to carry to the root; CSRPEM its PEM encoding,
	// as kept in the directory.
	CSR    *x509.CertificateRequest
	CSRPEM []byte
	// Constraints are those asked for; the certificate must carry them.
	Constraints Constraints
	// Dir is the CA directory.
	Dir string
	// Key tells where the pending key is kept: a key in a token or an
	// encrypted file needs its PIN or password for the import.
	Key KeySource
}

// pendingJSON is intermediate.json.
type pendingJSON struct {
	Version         int      `json:"version"`
	PermittedDNS    []string `json:"permitted_dns,omitempty"`
	PermittedEmails []string `json:"permitted_emails,omitempty"`
	PermittedURIs   []string `json:"permitted_uris,omitempty"`
	PermittedIPs    []string `json:"permitted_ips,omitempty"`
	ExcludedDNS     []string `json:"excluded_dns,omitempty"`
	ExcludedEmails  []string `json:"excluded_emails,omitempty"`
	ExcludedURIs    []string `json:"excluded_uris,omitempty"`
	ExcludedIPs     []string `json:"excluded_ips,omitempty"`
}

func parseIPNets(s []string) ([]*net.IPNet, error) {
	var out []*net.IPNet
	for _, v := range s {
		_, n, err := net.ParseCIDR(v)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// InitPending creates an intermediate CA in dir, which must not exist or be
// empty, up to its CSR: the key (encrypted with o.Password when set), the
// settings, the constraints asked for and the CSR, written last. The key
// never leaves the directory; the CSR travels to the root, whose certificate
// ImportIntermediate takes. On failure it removes what it wrote.
func InitPending(dir string, o InitOptions) (*Pending, error) {
	if o.Root {
		return nil, errors.New("an intermediate CA is not a root")
	}
	if o.KeyType == "" {
		o.KeyType = ECDSAP256
	}
	if o.Settings.Version == 0 {
		o.Settings = DefaultSettings()
	}
	o.Settings.Role = RoleIntermediate
	subject, err := o.subject()
	if err != nil {
		return nil, err
	}
	var p *Pending
	if err := createCADir(dir, &o, func(d *Dir, tok *tokenInit) (bool, error) {
		var wroteKey bool
		var err error
		p, wroteKey, err = writePending(d, subject, o, tok)
		return wroteKey, err
	}); err != nil {
		return nil, err
	}
	return p, nil
}

func writePending(d *Dir, subject pkix.Name, o InitOptions, tok *tokenInit) (*Pending, bool, error) {
	var (
		key crypto.Signer
		err error
	)
	if tok != nil {
		key, err = tok.signer()
	} else {
		key, err = o.KeyType.Generate()
	}
	if err != nil {
		return nil, false, err
	}
	der, err := x509.CreateCertificateRequest(nil, &x509.CertificateRequest{Subject: subject}, key)
	if err != nil {
		return nil, false, fmt.Errorf("creating CSR: %w", err)
	}
	csr, err := x509.ParseCertificateRequest(der)
	if err != nil {
		return nil, false, fmt.Errorf("parsing CSR: %w", err)
	}
	if tok != nil {
		err = d.CreateExclusive(keyURIFile, []byte(tok.uri.String()+"\n"), 0o644)
	} else {
		var keyPEM []byte
		if keyPEM, err = formats.MarshalPrivateKeyPEM(key, o.Password); err == nil {
			err = d.CreateExclusive(keyFile, keyPEM, 0o600)
		}
	}
	if err != nil {
		return nil, false, err
	}
	settings, _ := json.MarshalIndent(o.Settings, "", "  ")
	if err := d.CreateExclusive(settingsFile, append(settings, '\n'), 0o644); err != nil {
		return nil, true, err
	}
	k := o.constraints()
	pj := pendingJSON{Version: 1,
		PermittedDNS: k.PermittedDNS, PermittedEmails: k.PermittedEmails, PermittedURIs: k.PermittedURIs, PermittedIPs: ipStrings(k.PermittedIPs),
		ExcludedDNS: k.ExcludedDNS, ExcludedEmails: k.ExcludedEmails, ExcludedURIs: k.ExcludedURIs, ExcludedIPs: ipStrings(k.ExcludedIPs)}
	pjData, _ := json.MarshalIndent(pj, "", "  ")
	if err := d.CreateExclusive(pendingFile, append(pjData, '\n'), 0o644); err != nil {
		return nil, true, err
	}
	csrPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	if err := d.CreateExclusive(pendingCSRFile, csrPEM, 0o644); err != nil {
		return nil, true, err
	}
	p := &Pending{CSR: csr, CSRPEM: csrPEM, Constraints: k, Dir: d.Path(), Key: KeySource{Kind: KeyInFile}}
	switch {
	case tok != nil:
		p.Key = KeySource{Kind: KeyInToken, URI: tok.uri}
	case o.Password != nil:
		p.Key.Kind = KeyInEncryptedFile
	}
	return p, true, nil
}

// pendingFiles are the files of a pending intermediate, removed by
// RemovePending after the key.
var pendingFiles = []string{pendingCSRFile, pendingFile}

// OpenPending reads the pending intermediate CA in dir.
func OpenPending(dir string) (*Pending, error) {
	d, err := OpenDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w in %q", ErrNoCA, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("opening CA directory %q: %w", dir, err)
	}
	defer d.Close()
	return readPending(d)
}

func readPending(d *Dir) (*Pending, error) {
	if _, err := d.Stat(certFile); err == nil {
		return nil, fmt.Errorf("%w in %q: its certificate was imported already", ErrExists, d.Path())
	}
	csrPEM, err := d.ReadFile(pendingCSRFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w in %q: %w (%s)", ErrNoCA, d.Path(), ErrNoPending, pendingCSRFile)
	}
	if err != nil {
		return nil, fmt.Errorf("reading %q: %w", d.Join(pendingCSRFile), err)
	}
	block, _ := pem.Decode(csrPEM)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, fmt.Errorf("corrupt pending CSR %q: want a PEM CERTIFICATE REQUEST", d.Join(pendingCSRFile))
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("corrupt pending CSR %q: %w", d.Join(pendingCSRFile), err)
	}
	data, err := d.ReadFile(pendingFile)
	if err != nil {
		return nil, fmt.Errorf("reading %q: %w", d.Join(pendingFile), err)
	}
	var pj pendingJSON
	if err := json.Unmarshal(data, &pj); err != nil || pj.Version != 1 {
		return nil, fmt.Errorf("corrupt %q: want version 1 JSON", d.Join(pendingFile))
	}
	k := Constraints{PermittedDNS: pj.PermittedDNS, PermittedEmails: pj.PermittedEmails, PermittedURIs: pj.PermittedURIs,
		ExcludedDNS: pj.ExcludedDNS, ExcludedEmails: pj.ExcludedEmails, ExcludedURIs: pj.ExcludedURIs}
	if k.PermittedIPs, err = parseIPNets(pj.PermittedIPs); err == nil {
		k.ExcludedIPs, err = parseIPNets(pj.ExcludedIPs)
	}
	if err != nil {
		return nil, fmt.Errorf("corrupt %q: %w", d.Join(pendingFile), err)
	}
	u, err := readKeyURI(d)
	if err != nil {
		return nil, err
	}
	if u != nil {
		return &Pending{CSR: csr, CSRPEM: csrPEM, Constraints: k, Dir: d.Path(), Key: KeySource{Kind: KeyInToken, URI: u}}, nil
	}
	keyPEM, err := d.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("reading CA key %q: %w", d.Join(keyFile), err)
	}
	return &Pending{CSR: csr, CSRPEM: csrPEM, Constraints: k, Dir: d.Path(), Key: fileKeySource(keyPEM)}, nil
}

// RemovePending removes a pending intermediate CA that InitPending made in
// dir, key included, and dir itself when it is left empty: for a
// one-machine setup that failed half-way. It refuses a directory whose
// certificate was imported.
func RemovePending(dir string) error {
	d, err := OpenDir(dir)
	if err != nil {
		return err
	}
	if _, err := readPending(d); err != nil {
		d.Close()
		return err
	}
	var errs []error
	for _, name := range append(slices0(pendingFiles), settingsFile, filestore.LockFile, keyFile, keyURIFile) {
		if err := d.Root().Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	d.Close()
	if len(errs) == 0 {
		os.Remove(dir) // only when empty
	}
	return errors.Join(errs...)
}

func slices0(s []string) []string { return append([]string(nil), s...) }

// ImportOptions complete a pending intermediate CA.
type ImportOptions struct {
	// Certs is the certificate file's content: the intermediate's
	// certificate, optionally followed by the root's (as sign-intermediate
	// writes it).
	Certs []*x509.Certificate
	// Root is the root certificate, when it travels apart; nil means the
	// last of Certs. When both are given they must be the same.
	Root *x509.Certificate
	// RootCRL is the root's current CRL, PEM or DER.
	RootCRL []byte
	// Secret gives the password or PIN of the intermediate's key (see
	// OpenSigner), which signs the intermediate's first CRL; nil is none.
	Secret SecretFunc
	Now    func() time.Time
	// LockTimeout bounds the wait for the directory's lock.
	LockTimeout time.Duration
}

// ImportError is a certificate that ImportIntermediate refuses.
type ImportError struct{ Reason string }

func (e *ImportError) Error() string { return e.Reason }

// ImportIntermediate makes the pending intermediate CA in dir usable with
// its certificate. Before anything is written it checks that the
// certificate certifies the pending key, is an intermediate CA certificate
// (CA:TRUE pathLen 0, keyCertSign|cRLSign) valid now, is signed by the
// root given, which is a self-signed CA, and carries exactly the name
// constraints asked for with the CSR; and that the root's CRL is signed by
// the root and does not list the certificate. It then writes the root's
// certificate and CRL, chain.pem, the first CRL and ca.crt last; on
// failure it removes them, leaving the intermediate pending.
func ImportIntermediate(dir string, o ImportOptions) (*CA, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	d, err := OpenDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w in %q", ErrNoCA, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("opening CA directory %q: %w", dir, err)
	}
	c := &CA{dir: d, Now: o.Now}
	c.db = c.fileStore()
	ok := false
	defer func() {
		if !ok {
			d.Close()
		}
	}()
	unlock, err := c.Lock(o.LockTimeout)
	if err != nil {
		return nil, err
	}
	defer unlock()
	p, err := readPending(d)
	if err != nil {
		return nil, err
	}
	data, err := d.ReadFile(settingsFile)
	if err != nil {
		return nil, fmt.Errorf("reading CA settings %q: %w", d.Join(settingsFile), err)
	}
	if c.Settings, err = parseSettings(data); err != nil {
		return nil, fmt.Errorf("corrupt CA settings %q: %w", d.Join(settingsFile), err)
	}
	cert, root, err := checkImport(p, o)
	if err != nil {
		return nil, err
	}
	rootCRL, err := revoke.ParseCRL(o.RootCRL, root)
	if err != nil {
		return nil, &ImportError{fmt.Sprintf("the root CRL is not one of root %q: %v", root.Subject, err)}
	}
	if rootCRL.IsRevoked(cert.SerialNumber) {
		return nil, &ImportError{fmt.Sprintf("the root CRL %s lists the certificate (serial %x) as revoked", rootCRL.Number(), cert.SerialNumber)}
	}
	c.Cert, c.Chain = cert, []*x509.Certificate{cert, root}
	c.db = c.fileStore() // of the certificate imported
	if err := c.loadKeyURI(); err != nil {
		return nil, err
	}
	signer, err := c.OpenSigner(o.Secret)
	if err != nil {
		return nil, err
	}
	if err := c.writeImported(signer, crlDER(o.RootCRL)); err != nil {
		if cerr := c.unimport(); cerr != nil {
			err = fmt.Errorf("%w (removing the imported files failed too: %v)", err, cerr)
		}
		return nil, err
	}
	ok = true
	return c, nil
}

// checkImport checks the certificates of o against the pending request p
// and returns the intermediate's certificate and the root.
func checkImport(p *Pending, o ImportOptions) (cert, root *x509.Certificate, err error) {
	if len(o.Certs) == 0 || len(o.Certs) > 2 {
		return nil, nil, &ImportError{fmt.Sprintf("want the intermediate's certificate, optionally followed by the root's; got %d certificates", len(o.Certs))}
	}
	cert = o.Certs[0]
	if !publicKeysEqual(cert.PublicKey, p.CSR.PublicKey) {
		return nil, nil, &ImportError{fmt.Sprintf("the certificate %q (serial %x) certifies another key than the pending intermediate's (%s)", cert.Subject, cert.SerialNumber, pendingCSRFile)}
	}
	root = o.Root
	if len(o.Certs) == 2 {
		if root != nil && !root.Equal(o.Certs[1]) {
			return nil, nil, &ImportError{fmt.Sprintf("the certificate file's root %q is not the root certificate given (%q)", o.Certs[1].Subject, root.Subject)}
		}
		root = o.Certs[1]
	}
	if root == nil {
		return nil, nil, &ImportError{"no root certificate: the certificate file holds only the intermediate's; give the root's too"}
	}
	if !root.IsCA || !bytes.Equal(root.RawIssuer, root.RawSubject) || root.CheckSignatureFrom(root) != nil {
		return nil, nil, &ImportError{fmt.Sprintf("the root certificate %q is not a self-signed CA certificate", root.Subject)}
	}
	if err := cert.CheckSignatureFrom(root); err != nil || !bytes.Equal(cert.RawIssuer, root.RawSubject) {
		return nil, nil, &ImportError{fmt.Sprintf("the certificate %q (issued by %q) does not chain to the root %q", cert.Subject, cert.Issuer, root.Subject)}
	}
	if !cert.BasicConstraintsValid || !cert.IsCA || cert.MaxPathLen != 0 || !cert.MaxPathLenZero ||
		cert.KeyUsage&(x509.KeyUsageCertSign|x509.KeyUsageCRLSign) != x509.KeyUsageCertSign|x509.KeyUsageCRLSign {
		return nil, nil, &ImportError{fmt.Sprintf("the certificate %q is not an intermediate CA certificate (want CA:TRUE, pathLen 0, keyCertSign and cRLSign)", cert.Subject)}
	}
	now := o.Now()
	if now.Before(cert.NotBefore) || now.After(cert.NotAfter) {
		return nil, nil, &ImportError{fmt.Sprintf("the certificate %q is valid from %s to %s, not now (%s)", cert.Subject,
			cert.NotBefore.UTC().Format(time.RFC3339), cert.NotAfter.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))}
	}
	if err := checkCarries(cert, p.Constraints); err != nil {
		return nil, nil, &ImportError{fmt.Sprintf("the certificate %q does not carry the name constraints asked for: %v", cert.Subject, err)}
	}
	return cert, root, nil
}

// importedFiles are the files ImportIntermediate writes, in the order
// unimport removes them: ca.crt first.
var importedFiles = []string{certFile, CRLPEMFile, CRLDERFile, crlNumberFile, chainFile, CRLChainFile, RootCRLDERFile, RootCRLPEMFile, RootCertFile, "db", filestore.NameIndexDir, "certs"}

func (c *CA) writeImported(signer crypto.Signer, rootCRLDER []byte) error {
	d := c.dir
	if err := d.CreateExclusive(RootCertFile, pemCert(c.Root()), 0o644); err != nil {
		return err
	}
	if err := c.writeRootCRL(rootCRLDER); err != nil {
		return err
	}
	var chain []byte
	for _, cert := range c.Chain {
		chain = append(chain, pemCert(cert)...)
	}
	if err := d.CreateExclusive(chainFile, chain, 0o644); err != nil {
		return err
	}
	if err := filestore.Create(d); err != nil {
		return err
	}
	if err := d.MkdirAll("certs"); err != nil {
		return err
	}
	if _, err := c.PublishCRL(signer, 0); err != nil {
		return fmt.Errorf("publishing the first CRL: %w", err)
	}
	if err := d.CreateExclusive(certFile, pemCert(c.Cert), 0o644); err != nil {
		return err
	}
	return d.SyncDir(".")
}

func (c *CA) unimport() error {
	var errs []error
	for _, name := range importedFiles {
		if err := c.dir.Root().RemoveAll(name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// writeRootCRL writes the root's CRL as root-crl.pem and then root-crl.der
// (what minica reads), each atomically.
func (c *CA) writeRootCRL(der []byte) error {
	if err := store.WritePEMAtomic(c.dir, RootCRLPEMFile, der); err != nil {
		return err
	}
	if err := c.dir.WriteAtomic(RootCRLDERFile, der, 0o644); err != nil {
		return err
	}
	return c.writeCRLChain()
}

// LoadRootCRL reads and verifies the root's CRL that an intermediate's
// directory keeps, against root.crt. It gives ErrNoRootCRL when there is
// none. Its dates are not checked.
func (c *CA) LoadRootCRL() (*revoke.CRL, error) {
	if !c.IsIntermediate() {
		return nil, fmt.Errorf("%w: %q is not an intermediate CA", ErrNoRootCRL, c.dir.Path())
	}
	data, err := c.dir.ReadFile(RootCRLDERFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w in %q", ErrNoRootCRL, c.dir.Path())
	}
	if err != nil {
		return nil, fmt.Errorf("reading root CRL %q: %w", c.dir.Join(RootCRLDERFile), err)
	}
	crl, err := parseCRLFile(data, c.Root())
	if err != nil {
		return nil, fmt.Errorf("reading root CRL %q: %w", c.dir.Join(RootCRLDERFile), err)
	}
	return crl, nil
}

// ErrOlderCRL is returned by ImportRootCRL for a CRL whose number is lower
// than the one held.
var ErrOlderCRL = errors.New("the CRL is older than the one held")

// ImportRootCRL replaces the root CRL of an intermediate's directory with
// data (PEM or DER, read by revoke.ParseCRLFile), after checking that the
// root signed it and that revoke.MayReplace, the one rule for a CRL after
// another, lets it replace the CRL held: a lower number is ErrOlderCRL, the
// same number changes nothing and returns the CRL held. The caller must
// hold the lock.
func (c *CA) ImportRootCRL(data []byte) (*revoke.CRL, error) {
	if !c.IsIntermediate() {
		return nil, fmt.Errorf("%q is not an intermediate CA: only an intermediate keeps its root's CRL", c.dir.Path())
	}
	crl, err := parseCRLFile(data, c.Root())
	if err != nil {
		return nil, fmt.Errorf("the CRL is not one of the root %q: %w", c.Root().Subject, err)
	}
	held, err := c.LoadRootCRL()
	if err != nil && !errors.Is(err, ErrNoRootCRL) {
		return nil, err
	}
	var prev revoke.IssuedCRL
	if held != nil {
		prev = revoke.IssuedCRL{CRL: held, Issuer: c.Root()}
	}
	replace, err := revoke.MayReplace(revoke.IssuedCRL{CRL: crl, Issuer: c.Root()}, prev, c.Now())
	switch {
	case errors.Is(err, revoke.ErrLowerNumber):
		return nil, fmt.Errorf("%w: number %s, but %s is held (of %s)", ErrOlderCRL, crl.Number(), held.Number(), held.ThisUpdate().UTC().Format(time.RFC3339))
	case err != nil:
		return nil, fmt.Errorf("importing the root CRL: %w", err)
	case !replace:
		return held, nil
	}
	// A CRL that lists this intermediate is imported all the same: the
	// root says it is revoked, and verify must say so too.
	return crl, c.writeRootCRL(crlDER(data))
}

// crlDER returns the DER of a CRL given as PEM or DER.
func crlDER(data []byte) []byte {
	if block, _ := pem.Decode(data); block != nil && block.Type == "X509 CRL" {
		return block.Bytes
	}
	return data
}

package ca

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	filestore "minica/ca/store/file"
	"net"
	"os"
	"time"

	"minica/formats"
)

// ErrExists is returned by Init when the directory already holds a CA.
var ErrExists = errors.New("a CA already exists")

// ErrUnfinished is returned by Init for a directory that holds a CA key but
// no CA certificate, as an init killed half-way leaves. Init never deletes
// a CA key, so it leaves the directory to the user.
var ErrUnfinished = errors.New("a CA key (" + keyFile + ") but no CA certificate (" + certFile + ")")

// unfinishedURI is ErrUnfinished for a CA key URI (ca.key-uri).
type unfinishedURI struct{ dir string }

func (u unfinishedURI) Error() string {
	return fmt.Sprintf("directory %q holds a CA key URI (%s) but no CA certificate (%s), as an interrupted init leaves it", u.dir, keyURIFile, certFile)
}
func (unfinishedURI) Is(target error) bool { return target == ErrUnfinished }

// InitOptions describe a new CA.
type InitOptions struct {
	CommonName         string
	Organization       string
	OrganizationalUnit string
	Country            string
	Province           string
	Locality           string
	KeyType            KeyType       // "" means ECDSAP256
	Validity           time.Duration // 0 means DefaultCAValidity
	// Password encrypts the CA key; nil stores it unencrypted.
	Password []byte
	// KeyURI, when set, keeps the CA key in a PKCS#11 token instead of
	// ca.key (see tokenkey.go): a new key is generated there unless
	// ExistingKey, which uses the key the URI names. PIN logs in.
	KeyURI      *KeyURI
	ExistingKey bool
	PIN         []byte
	// Permitted name constraints: DNS domains, email domains or addresses,
	// URI host domains and IP ranges. All empty means unconstrained; with
	// any set, the name types left empty are excluded (see constraints.go).
	PermittedDNS    []string
	PermittedEmails []string
	PermittedURIs   []string
	PermittedIPs    []*net.IPNet
	// Excluded name constraints, of the same kinds.
	ExcludedDNS    []string
	ExcludedEmails []string
	ExcludedURIs   []string
	ExcludedIPs    []*net.IPNet
	// Root makes a root CA for a hierarchy (see hierarchy.go): pathLen
	// MaxPathLen (0 means DefaultRootPathLen), DefaultRootValidity and
	// DefaultRootCRLLifetime unless set, and it signs only intermediates.
	Root       bool
	MaxPathLen int
	Settings   Settings
	Now        func() time.Time // nil means time.Now
	// FirstCRL publishes the empty CRL number 1 before the CA certificate
	// is written, so that the CA exists with its CRL or not at all.
	FirstCRL bool
	// Store is the CA's issuance database, kept in its settings: "" for
	// the directory's files, or a URL of one of Engines (see CheckStore),
	// which is migrated and must belong to no CA before anything is
	// written.
	Store   string
	Engines []Engine
}

// Init creates a CA in the directory dir, which must not exist or be empty.
// It never overwrites an existing CA: a directory that holds ca.crt gives
// ErrExists, one that holds ca.key without it ErrUnfinished, any other
// non-empty one an error. The certificate's serial is 128 random bits; its
// notBefore is backdated by Backdate.
//
// ca.crt is written last, so a directory is a CA only once it is complete.
// When Init fails it removes what it wrote, and the directory if it made it.
func Init(dir string, o InitOptions) (*CA, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.KeyType == "" {
		o.KeyType = ECDSAP256
	}
	if o.Settings.Version == 0 {
		o.Settings = DefaultSettings()
	}
	if o.Root {
		o.rootDefaults()
	}
	if o.Validity == 0 {
		o.Validity = DefaultCAValidity
	}
	subject, err := o.subject()
	if err != nil {
		return nil, err
	}
	if o.Store != "" && o.Store != StoreFile {
		if err := prepareInitStore(o.Store, o.Engines); err != nil {
			return nil, err
		}
		o.Settings.Store = o.Store
	}
	if err := createCADir(dir, &o, func(d *Dir, tok *tokenInit) (bool, error) {
		return writeCA(d, subject, o, tok)
	}); err != nil {
		return nil, err
	}
	c, err := OpenWith(dir, OpenOptions{Engines: o.Engines})
	if err != nil {
		return nil, err
	}
	if err := c.db.AdoptPublishedCRL(); err != nil {
		c.Close()
		return nil, fmt.Errorf("saving the first CRL in the store: %w", err)
	}
	return c, nil
}

// createCADir makes a CA directory: it opens the token that o names (first,
// so that a wrong PIN or a missing key changes nothing), creates and opens
// dir, runs write and syncs the directory. When any step fails it aborts
// the token's new key and removes what write wrote (its wroteKey says
// whether the key is its own), and the directory if it made it.
func createCADir(dir string, o *InitOptions, write func(d *Dir, tok *tokenInit) (wroteKey bool, err error)) error {
	var tok *tokenInit
	var err error
	if o.KeyURI != nil {
		if tok, err = openTokenInit(o); err != nil {
			return err
		}
		defer tok.tok.close()
	}
	created, err := prepareDir(dir)
	if err != nil {
		return err
	}
	d, err := OpenDir(dir)
	if err != nil {
		if created {
			os.Remove(dir)
		}
		return err
	}
	defer d.Close()
	wroteKey, err := write(d, tok)
	if err == nil {
		err = d.SyncDir(".")
	}
	if err != nil {
		if tok != nil {
			if terr := tok.abort(); terr != nil {
				err = fmt.Errorf("%w (%v)", err, terr)
			}
		}
		if cerr := removeUnfinished(d, wroteKey, created); cerr != nil {
			err = fmt.Errorf("%w (removing the unfinished CA failed too: %v)", err, cerr)
		}
	}
	return err
}

// writeCA generates the key (in the token of tok when it is set) and
// certificate and writes the CA's files into d, ca.crt last; wroteKey
// reports whether ca.key (or ca.key-uri) is its own.
func writeCA(d *Dir, subject pkix.Name, o InitOptions, tok *tokenInit) (wroteKey bool, err error) {
	var key crypto.Signer
	if tok != nil {
		key, err = tok.signer()
	} else {
		key, err = o.KeyType.Generate()
	}
	if err != nil {
		return false, err
	}
	cert, err := selfSign(key, subject, o)
	if err != nil {
		return false, err
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
		return false, err
	}
	settings, _ := json.MarshalIndent(o.Settings, "", "  ")
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
	if err := d.CreateExclusive(settingsFile, append(settings, '\n'), 0o644); err != nil {
		return true, err
	}
	if err := d.CreateExclusive(chainFile, certPEM, 0o644); err != nil {
		return true, err
	}
	if err := filestore.Create(d); err != nil {
		return true, err
	}
	if err := d.MkdirAll("certs"); err != nil {
		return true, err
	}
	if o.FirstCRL {
		c := &CA{dir: d, Cert: cert, Chain: []*x509.Certificate{cert}, Settings: o.Settings, Now: o.Now}
		c.db = c.fileStore()
		if _, err := c.PublishCRL(key, 0); err != nil {
			return true, fmt.Errorf("publishing the first CRL: %w", err)
		}
	}
	// ca.crt goes last: its presence is what marks a directory as a CA.
	return true, d.CreateExclusive(certFile, certPEM, 0o644)
}

// initFiles are the names Init writes, in the order removeUnfinished
// removes them: ca.crt first, so that the directory is never a CA without
// all of them, and ca.key last.
var initFiles = []string{certFile, CRLPEMFile, CRLDERFile, crlNumberFile, chainFile, settingsFile, "db", "certs", keyFile, keyURIFile}

// removeUnfinished removes what a failed Init wrote in d. Only an Init that
// created ca.key (with O_EXCL) owns the other files: another one may be
// writing them. The directory goes too if Init created it.
func removeUnfinished(d *Dir, wroteKey, created bool) error {
	var errs []error
	if wroteKey {
		for _, name := range initFiles {
			if err := d.Root().RemoveAll(name); err != nil {
				errs = append(errs, err)
			}
		}
		entries, _ := fs.ReadDir(d.Root().FS(), ".")
		for _, e := range entries {
			if isTemp(e.Name()) {
				errs = append(errs, d.Root().Remove(e.Name()))
			}
		}
	}
	if created {
		// Fails, as it should, if another process put files there.
		if err := os.Remove(d.Path()); err != nil && wroteKey {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (o *InitOptions) subject() (pkix.Name, error) {
	n := pkix.Name{CommonName: o.CommonName}
	if err := ValidateText("common name", o.CommonName); err != nil {
		return n, err
	}
	for _, a := range []struct {
		field, value string
		dst          *[]string
	}{
		{"organization", o.Organization, &n.Organization},
		{"organizational unit", o.OrganizationalUnit, &n.OrganizationalUnit},
		{"province", o.Province, &n.Province},
		{"locality", o.Locality, &n.Locality},
	} {
		if a.value == "" {
			continue
		}
		if err := ValidateText(a.field, a.value); err != nil {
			return n, err
		}
		*a.dst = []string{a.value}
	}
	if o.Country != "" {
		if len(o.Country) != 2 || o.Country[0] < 'A' || o.Country[0] > 'Z' || o.Country[1] < 'A' || o.Country[1] > 'Z' {
			return n, fmt.Errorf("invalid country %s: want a two-letter ISO 3166 code in capitals, such as DE", printable(o.Country))
		}
		n.Country = []string{o.Country}
	}
	return n, o.validateConstraints()
}

// prepareDir makes sure dir exists with mode 0700 and holds no CA, and
// reports whether it created it.
func prepareDir(dir string) (created bool, err error) {
	if err := os.Mkdir(dir, 0o700); err == nil || !errors.Is(err, fs.ErrExist) {
		if err != nil {
			return false, fmt.Errorf("creating CA directory %q: %w", dir, err)
		}
		return true, nil
	}
	if _, err := os.Lstat(dir + string(os.PathSeparator) + certFile); err == nil {
		return false, fmt.Errorf("%w in %q", ErrExists, dir)
	}
	if _, err := os.Lstat(dir + string(os.PathSeparator) + keyFile); err == nil {
		return false, fmt.Errorf("directory %q holds %w, as an interrupted init leaves it", dir, ErrUnfinished)
	}
	if _, err := os.Lstat(dir + string(os.PathSeparator) + keyURIFile); err == nil {
		return false, unfinishedURI{dir}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, fmt.Errorf("reading CA directory %q: %w", dir, err)
	}
	if len(entries) > 0 {
		return false, fmt.Errorf("directory %q is not empty; a new CA needs an empty or new directory", dir)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return false, fmt.Errorf("restricting CA directory %q: %w", dir, err)
	}
	return false, nil
}

func selfSign(key crypto.Signer, subject pkix.Name, o InitOptions) (*x509.Certificate, error) {
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	ski, err := subjectKeyID(key.Public())
	if err != nil {
		return nil, err
	}
	now := o.Now().UTC().Truncate(time.Second)
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               subject,
		NotBefore:             now.Add(-Backdate),
		NotAfter:              now.Add(o.Validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
		SubjectKeyId:          ski,
	}
	if o.Root {
		tmpl.MaxPathLen, tmpl.MaxPathLenZero = o.MaxPathLen, false
	}
	setNameConstraints(tmpl, o.constraints())
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("signing CA certificate: %w", err)
	}
	return x509.ParseCertificate(der)
}

// randomSerial returns a positive serial of 128 random bits (RFC 5280
// 4.1.2.2 allows up to 20 octets; CA/B requires 64 bits of entropy).
func randomSerial() (*big.Int, error) {
	b := make([]byte, 16)
	for {
		if _, err := rand.Read(b); err != nil {
			return nil, fmt.Errorf("generating serial: %w", err)
		}
		if n := new(big.Int).SetBytes(b); n.Sign() > 0 {
			return n, nil
		}
	}
}

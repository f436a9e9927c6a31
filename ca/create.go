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
	"net"
	"os"
	"time"

	"minica/formats"
)

// ErrExists is returned by Init when the directory already holds a CA.
var ErrExists = errors.New("a CA already exists")

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
	// Permitted name constraints: DNS domains, email domains or addresses,
	// URI host domains and IP ranges. All empty means unconstrained; with
	// any set, the name types left empty are excluded (see constraints.go).
	PermittedDNS    []string
	PermittedEmails []string
	PermittedURIs   []string
	PermittedIPs    []*net.IPNet
	Settings        Settings
	Now             func() time.Time // nil means time.Now
}

// Init creates a CA in the directory dir, which must not exist or be empty.
// It never overwrites an existing CA: a directory that holds ca.crt or
// ca.key gives ErrExists, any other non-empty one an error. The
// certificate's serial is 128 random bits; its notBefore is backdated by
// Backdate.
func Init(dir string, o InitOptions) (*CA, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.KeyType == "" {
		o.KeyType = ECDSAP256
	}
	if o.Validity == 0 {
		o.Validity = DefaultCAValidity
	}
	if o.Settings.Version == 0 {
		o.Settings = DefaultSettings()
	}
	subject, err := o.subject()
	if err != nil {
		return nil, err
	}
	if err := prepareDir(dir); err != nil {
		return nil, err
	}
	key, err := o.KeyType.Generate()
	if err != nil {
		return nil, err
	}
	cert, err := selfSign(key, subject, o)
	if err != nil {
		return nil, err
	}
	keyPEM, err := formats.MarshalPrivateKeyPEM(key, o.Password)
	if err != nil {
		return nil, err
	}
	d, err := OpenDir(dir)
	if err != nil {
		return nil, err
	}
	settings, _ := json.MarshalIndent(o.Settings, "", "  ")
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
	// ca.crt goes last: its presence is what marks a directory as a CA.
	steps := []struct {
		name string
		data []byte
		perm os.FileMode
	}{
		{keyFile, keyPEM, 0o600},
		{settingsFile, append(settings, '\n'), 0o644},
		{chainFile, certPEM, 0o644},
		{certFile, certPEM, 0o644},
	}
	for _, s := range steps {
		if err := d.CreateExclusive(s.name, s.data, s.perm); err != nil {
			d.Close()
			return nil, err
		}
	}
	for _, sub := range []string{"db", "certs"} {
		if err := d.MkdirAll(sub); err != nil {
			d.Close()
			return nil, err
		}
	}
	if err := d.SyncDir("."); err != nil {
		d.Close()
		return nil, err
	}
	d.Close()
	return Open(dir)
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

// prepareDir makes sure dir exists with mode 0700 and holds no CA.
func prepareDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err == nil || !errors.Is(err, fs.ErrExist) {
		if err != nil {
			return fmt.Errorf("creating CA directory %q: %w", dir, err)
		}
		return nil
	}
	for _, f := range []string{certFile, keyFile} {
		if _, err := os.Lstat(dir + string(os.PathSeparator) + f); err == nil {
			return fmt.Errorf("%w in %q", ErrExists, dir)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("reading CA directory %q: %w", dir, err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("directory %q is not empty; a new CA needs an empty or new directory", dir)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("restricting CA directory %q: %w", dir, err)
	}
	return nil
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
	setNameConstraints(tmpl, o)
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

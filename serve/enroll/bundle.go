package enroll

import (
	"crypto"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	"github.com/smallstep/pkcs7"
	"howett.net/plist"

	"minica/ca"
	"minica/formats"
)

// bundleFormat is a file type the enrollment page offers.
type bundleFormat int

const (
	// bundleP12 is the modern PKCS#12 (AES-256, SHA-256): browsers, Java,
	// OpenSSL, Windows 10 and later.
	bundleP12 bundleFormat = iota
	// bundleP12Compat is the compat PKCS#12 (3DES, SHA-1 MAC): macOS and
	// iOS Keychain, Android, Windows 8.1 and older, Windows Server 2016 and
	// older.
	bundleP12Compat
	// bundleMobileconfig is an Apple configuration profile holding the
	// compat PKCS#12 and the CA certificate.
	bundleMobileconfig
)

var bundleFormats = []bundleFormat{bundleP12, bundleP12Compat, bundleMobileconfig}

func parseBundleFormat(s string) (bundleFormat, bool) {
	for _, f := range bundleFormats {
		if f.String() == s {
			return f, true
		}
	}
	return 0, false
}

// String is the form value of f.
func (f bundleFormat) String() string {
	switch f {
	case bundleP12Compat:
		return "p12-compat"
	case bundleMobileconfig:
		return "mobileconfig"
	}
	return "p12"
}

func (f bundleFormat) suffix() string {
	switch f {
	case bundleP12Compat:
		return "-compat.p12"
	case bundleMobileconfig:
		return ".mobileconfig"
	}
	return ".p12"
}

func (f bundleFormat) contentType() string {
	if f == bundleMobileconfig {
		return "application/x-apple-aspen-config"
	}
	return "application/x-pkcs12"
}

// label is how the page names f: what it is and where it installs, in
// words a person knows.
func (f bundleFormat) label() string {
	switch f {
	case bundleP12Compat:
		return "Certificate file (.p12) for older systems and Apple's Keychain: macOS, iOS, Android, Windows 8.1 and older, Windows Server 2016 and older"
	case bundleMobileconfig:
		return "Apple profile (.mobileconfig) for iPhone, iPad and Mac: the certificate and the CA together"
	}
	return "Certificate file (.p12) for current systems: Windows 10 and 11, Linux, Firefox, Chrome, Java, OpenSSL"
}

// short is how the page names f in a sentence.
func (f bundleFormat) short() string {
	switch f {
	case bundleP12Compat:
		return "the certificate file (.p12) for older systems"
	case bundleMobileconfig:
		return "the Apple profile (.mobileconfig)"
	}
	return "the certificate file (.p12) for current systems"
}

// bundle builds the file of format f for the issued certificate and key.
func (h *Enroller) bundle(f bundleFormat, key crypto.Signer, issued *ca.Issued, password string) ([]byte, error) {
	profile := formats.P12Modern
	if f != bundleP12 {
		profile = formats.P12Compat
	}
	chain := h.cfg.CA.Chain
	p12, err := formats.P12Encoder{Profile: profile, Iterations: h.cfg.P12Iterations}.Encode(key, issued.Cert, chain, password)
	if err != nil || f != bundleMobileconfig {
		return p12, err
	}
	// The device trusts the root; an intermediate travels in the bundle.
	profileXML, err := mobileconfig(issued.Record.Name, issued.Cert, h.cfg.CA.Cert, chain[len(chain)-1], p12)
	if err != nil {
		return nil, err
	}
	if h.cfg.SigningCert == nil {
		return profileXML, nil
	}
	return signProfile(profileXML, h.cfg.SigningCert)
}

// mobilePayload is one payload of a configuration profile; the outer
// profile uses the same keys (Apple's Configuration Profile Reference).
type mobilePayload struct {
	PayloadContent             any    `plist:"PayloadContent"`
	PayloadType                string `plist:"PayloadType"`
	PayloadVersion             int    `plist:"PayloadVersion"`
	PayloadIdentifier          string `plist:"PayloadIdentifier"`
	PayloadUUID                string `plist:"PayloadUUID"`
	PayloadDisplayName         string `plist:"PayloadDisplayName"`
	PayloadDescription         string `plist:"PayloadDescription,omitempty"`
	PayloadOrganization        string `plist:"PayloadOrganization,omitempty"`
	PayloadCertificateFileName string `plist:"PayloadCertificateFileName,omitempty"`
	PayloadRemovalDisallowed   *bool  `plist:"PayloadRemovalDisallowed,omitempty"`
}

// mobileconfig returns an Apple configuration profile (XML plist) with a
// com.apple.security.pkcs12 payload (the bundle; the device asks for its
// password when installing) and a com.apple.security.root payload (anchor,
// the root of caCert's chain, DER; caCert itself for a single CA).
func mobileconfig(name string, leaf, caCert, anchor *x509.Certificate, p12 []byte) ([]byte, error) {
	id := "minica.enroll." + name
	uuids := make([]string, 3)
	for i := range uuids {
		u, err := newUUID()
		if err != nil {
			return nil, err
		}
		uuids[i] = u
	}
	caName := caCert.Subject.CommonName
	org := ""
	if len(caCert.Subject.Organization) > 0 {
		org = caCert.Subject.Organization[0]
	}
	removable := false
	profile := mobilePayload{
		PayloadType: "Configuration", PayloadVersion: 1, PayloadIdentifier: id, PayloadUUID: uuids[0],
		PayloadDisplayName:       fmt.Sprintf("%s (%s)", leaf.Subject.CommonName, caName),
		PayloadDescription:       fmt.Sprintf("The client certificate of %s, issued by %s, and that CA's certificate.", leaf.Subject.CommonName, caName),
		PayloadOrganization:      org,
		PayloadRemovalDisallowed: &removable,
		PayloadContent: []mobilePayload{
			{
				PayloadType: "com.apple.security.pkcs12", PayloadVersion: 1, PayloadIdentifier: id + ".pkcs12", PayloadUUID: uuids[1],
				PayloadDisplayName: leaf.Subject.CommonName, PayloadCertificateFileName: name + ".p12", PayloadContent: p12,
			},
			{
				PayloadType: "com.apple.security.root", PayloadVersion: 1, PayloadIdentifier: id + ".ca", PayloadUUID: uuids[2],
				PayloadDisplayName: anchor.Subject.CommonName, PayloadCertificateFileName: "ca.crt", PayloadContent: anchor.Raw,
			},
		},
	}
	out, err := plist.MarshalIndent(profile, plist.XMLFormat, "\t")
	if err != nil {
		return nil, fmt.Errorf("encoding the configuration profile: %w", err)
	}
	return out, nil
}

// newUUID returns a random (version 4) UUID.
func newUUID() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%X-%X-%X-%X-%X", b[0:4], b[4:6], b[6:8], b[8:10], b[10:]), nil
}

// signProfile wraps a profile in CMS SignedData (SHA-256), signed by the
// certificate get returns, with its chain: Apple devices then show the
// profile as verified once they trust the CA.
func signProfile(content []byte, get func() (*tls.Certificate, error)) ([]byte, error) {
	cert, err := get()
	if err != nil {
		return nil, fmt.Errorf("loading the profile-signing certificate: %w", err)
	}
	if len(cert.Certificate) == 0 {
		return nil, errors.New("the profile-signing certificate is empty")
	}
	leaf := cert.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, fmt.Errorf("parsing the profile-signing certificate: %w", err)
		}
	}
	sd, err := pkcs7.NewSignedData(content)
	if err != nil {
		return nil, fmt.Errorf("signing the profile: %w", err)
	}
	sd.SetDigestAlgorithm(pkcs7.OIDDigestAlgorithmSHA256)
	if err := sd.AddSigner(leaf, cert.PrivateKey, pkcs7.SignerInfoConfig{}); err != nil {
		return nil, fmt.Errorf("signing the profile: %w", err)
	}
	for _, der := range cert.Certificate[1:] {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, fmt.Errorf("parsing the profile-signing chain: %w", err)
		}
		sd.AddCertificate(c)
	}
	out, err := sd.Finish()
	if err != nil {
		return nil, fmt.Errorf("signing the profile: %w", err)
	}
	return out, nil
}

package proxy

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"time"

	"minica/revoke"
)

// Sentinel errors of Reload and New; callers branch on them with errors.Is.
var (
	ErrCRLOlder       = errors.New("CRL number is lower than the current one")
	ErrCRLFuture      = errors.New("CRL thisUpdate is in the future")
	ErrCRLExpired     = errors.New("CRL is past its nextUpdate")
	ErrCRLUnverified  = errors.New("no CA of the bundle accepts the CRL")
	ErrNoCA           = errors.New("CA bundle is empty")
	ErrCRLIssuerGone  = errors.New("new CA bundle lacks the issuer of the CRL in use, and no new CRL verifies")
	ErrNoLeaf         = errors.New("server certificate has no leaf")
	errCertKeyMissing = errors.New("server certificate has no private key")
)

// clockSkew is how far in the future a new CRL's thisUpdate may be, for CA
// and proxy clocks that disagree by a little.
const clockSkew = time.Minute

// trust is one immutable generation of what the proxy verifies against.
// A reload builds a new one and swaps it in atomically.
type trust struct {
	gen   uint64
	cas   []*x509.Certificate
	roots *x509.CertPool
	crl   Revocations
	// crlIssuer is the CA of the bundle that signed crl.
	crlIssuer *x509.Certificate
	crlSum    [32]byte // SHA-256 of the CRL bytes
	cert      *tls.Certificate
	// tls is the configuration of handshakes verified against this trust.
	tls *tls.Config
}

func loadCA(cfg *Config) ([]*x509.Certificate, *x509.CertPool, error) {
	cas, err := cfg.LoadCA()
	if err != nil {
		return nil, nil, fmt.Errorf("loading CA bundle: %w", err)
	}
	if len(cas) == 0 {
		return nil, nil, fmt.Errorf("loading CA bundle: %w", ErrNoCA)
	}
	pool := x509.NewCertPool()
	for _, c := range cas {
		pool.AddCert(c)
	}
	return cas, pool, nil
}

func loadCert(cfg *Config) (*tls.Certificate, error) {
	c, err := cfg.LoadCert()
	if err != nil {
		return nil, fmt.Errorf("loading server certificate: %w", err)
	}
	if len(c.Certificate) == 0 {
		return nil, fmt.Errorf("loading server certificate: %w", ErrNoLeaf)
	}
	if c.PrivateKey == nil {
		return nil, fmt.Errorf("loading server certificate: %w", errCertKeyMissing)
	}
	if c.Leaf == nil {
		leaf, err := x509.ParseCertificate(c.Certificate[0])
		if err != nil {
			return nil, fmt.Errorf("parsing server certificate: %w", err)
		}
		c.Leaf = leaf
	}
	return &c, nil
}

// loadedCRL is a CRL that loaded and verified, with its issuer and the
// SHA-256 of its bytes.
type loadedCRL struct {
	crl    Revocations
	issuer *x509.Certificate
	sum    [32]byte
}

// loadCRL reads the CRL and verifies it against cas. Against prev (nil at
// start): unchanged bytes are not parsed again, and a CRL of the same issuer
// must not have a lower number.
func loadCRL(cfg *Config, cas []*x509.Certificate, prev *trust, now time.Time) (loadedCRL, error) {
	data, err := cfg.LoadCRL()
	if err != nil {
		return loadedCRL{}, fmt.Errorf("loading CRL: %w", err)
	}
	l := loadedCRL{sum: sha256.Sum256(data)}
	if prev != nil && l.sum == prev.crlSum && slices.ContainsFunc(cas, prev.crlIssuer.Equal) {
		return loadedCRL{crl: prev.crl, issuer: prev.crlIssuer, sum: l.sum}, nil
	}
	crl, issuer, err := CheckCRL(cfg.ParseCRL, data, cas, prevCRL(prev), prevIssuer(prev), now)
	if err != nil {
		return loadedCRL{}, fmt.Errorf("loading CRL: %w", err)
	}
	l.crl, l.issuer = crl, issuer
	return l, nil
}

func prevCRL(t *trust) Revocations {
	if t == nil {
		return nil
	}
	return t.crl
}

func prevIssuer(t *trust) *x509.Certificate {
	if t == nil {
		return nil
	}
	return t.crlIssuer
}

// CheckCRL is the check every new CRL passes, at New, at Reload, and in
// `minica crl fetch`: data must parse and verify (by parse) against a CA
// of cas; its thisUpdate must not be more than a minute after now; and a
// CRL of the issuer of prev, the CRL in use (nil for none), must not have
// a lower number. It returns the CRL and the CA that signed it.
func CheckCRL(parse CRLParser, data []byte, cas []*x509.Certificate, prev Revocations, prevIssuer *x509.Certificate, now time.Time) (Revocations, *x509.Certificate, error) {
	var errs []error
	for _, ca := range cas {
		crl, err := parse(data, ca)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if crl.ThisUpdate().After(now.Add(clockSkew)) {
			return nil, nil, fmt.Errorf("%w (%s)", ErrCRLFuture, crl.ThisUpdate().UTC().Format(time.RFC3339))
		}
		if prev != nil && ca.Equal(prevIssuer) && crl.Number().Cmp(prev.Number()) < 0 {
			return nil, nil, fmt.Errorf("%w (%s < %s)", ErrCRLOlder, crl.Number(), prev.Number())
		}
		return crl, ca, nil
	}
	return nil, nil, fmt.Errorf("%w: %w", ErrCRLUnverified, errors.Join(errs...))
}

// crlState is the state of the CRL at now by revoke.Freshness, past
// nextUpdate by at most grace, and before thisUpdate by at most clockSkew:
// the one freshness rule, as revoke.Judge applies it to every client.
func crlState(crl Revocations, grace time.Duration, now time.Time) revoke.CRLState {
	return revoke.Freshness(crl.ThisUpdate().Add(-clockSkew), crl.NextUpdate(), revoke.Thresholds{Grace: grace}, now)
}

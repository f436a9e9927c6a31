package proxy

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"time"
)

// Sentinel errors of Reload and New; callers branch on them with errors.Is.
var (
	ErrCRLOlder       = errors.New("CRL number is lower than the current one")
	ErrCRLFuture      = errors.New("CRL thisUpdate is in the future")
	ErrCRLExpired     = errors.New("CRL is past its nextUpdate")
	ErrCRLUnverified  = errors.New("CRL is not signed by any CA of the bundle")
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
	cert      *tls.Certificate
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

// loadCRL reads the CRL and verifies it against cas, returning it and its
// issuer. A CRL of the same issuer as old must not have a lower number; old
// is nil at start.
func loadCRL(cfg *Config, cas []*x509.Certificate, old Revocations, oldIssuer *x509.Certificate, now time.Time) (Revocations, *x509.Certificate, error) {
	data, err := cfg.LoadCRL()
	if err != nil {
		return nil, nil, fmt.Errorf("loading CRL: %w", err)
	}
	var crl Revocations
	var issuer *x509.Certificate
	var errs []error
	for _, ca := range cas {
		if crl, err = cfg.ParseCRL(data, ca); err == nil {
			issuer = ca
			break
		}
		errs = append(errs, err)
	}
	if crl == nil {
		return nil, nil, fmt.Errorf("loading CRL: %w: %w", ErrCRLUnverified, errors.Join(errs...))
	}
	if crl.ThisUpdate().After(now.Add(clockSkew)) {
		return nil, nil, fmt.Errorf("loading CRL: %w (%s)", ErrCRLFuture, crl.ThisUpdate().UTC().Format(time.RFC3339))
	}
	if old != nil && issuer.Equal(oldIssuer) && crl.Number().Cmp(old.Number()) < 0 {
		return nil, nil, fmt.Errorf("loading CRL: %w (%s < %s)", ErrCRLOlder, crl.Number(), old.Number())
	}
	return crl, issuer, nil
}

// crlState says whether the CRL may be relied on at now: "" (fresh),
// "grace" (past nextUpdate, within CRLGrace) or "expired".
func crlState(crl Revocations, grace time.Duration, now time.Time) string {
	next := crl.NextUpdate()
	switch {
	case !now.After(next):
		return ""
	case grace > 0 && !now.After(next.Add(grace)):
		return "grace"
	}
	return "expired"
}

package proxy

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"minica/crlsource"
	"minica/internal/osmem"
	"minica/revoke"
)

// Sentinel errors of Reload and New; callers branch on them with errors.Is.
var (
	ErrCRLOlder       = errors.New("CRL number is lower than the current one")
	ErrCRLFuture      = errors.New("CRL thisUpdate is in the future")
	ErrCRLExpired     = errors.New("CRL is past its nextUpdate")
	ErrCRLUnverified  = revoke.ErrUnverified
	ErrNoCA           = errors.New("CA bundle is empty")
	ErrCRLIssuerGone  = errors.New("new CA bundle lacks the issuer of the CRL in use, and no new CRL verifies")
	ErrCRLTwice       = revoke.ErrTwoCRLs
	ErrNoLeaf         = errors.New("server certificate has no leaf")
	errCertKeyMissing = errors.New("server certificate has no private key")
)

// clockSkew is how far in the future a new CRL's thisUpdate may be, for CA
// and proxy clocks that disagree by a little (revoke.MayReplace), and so
// how long before its thisUpdate a CRL is used.
const clockSkew = revoke.MaxClockSkew

// trust is one immutable generation of what the proxy verifies against.
// A reload builds a new one and swaps it in atomically.
type trust struct {
	gen   uint64
	cas   []*x509.Certificate
	roots *x509.CertPool
	// anchors and inters split cas for a bundle that holds a hierarchy
	// (a CA of it issued by another): the CAs whose issuer is not in the
	// bundle are the anchors, the others intermediates, so that each
	// client's path runs up to the root and the CRL of every CA on it is
	// checked. layered says whether there are any intermediates; without,
	// anchors is roots.
	anchors *x509.CertPool
	inters  []*x509.Certificate
	layered bool
	// crls are the loaded CRLs, one per CA, each with its issuer.
	crls []revoke.IssuedCRL
	// crl is the CRL of crls with the earliest nextUpdate, the one whose
	// freshness the health endpoint, the metrics and the expiry watcher
	// follow; crlIssuer is the CA that signed it.
	crl       Revocations
	crlIssuer *x509.Certificate
	crlSum    [32]byte // SHA-256 of the CRL bytes
	// crlDelta is the SHA-256 of the delta CRL applied to the CRL (from a
	// crlsource.DeltaSource), zero for none.
	crlDelta [32]byte
	// tls is the configuration of handshakes verified against this trust,
	// which reaches it through held while it is in use (see clientConfig).
	tls  *tls.Config
	held *atomic.Pointer[trust]
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

// setCAs makes cas, whose pool is roots, the bundle of t.
func (t *trust) setCAs(cas []*x509.Certificate, roots *x509.CertPool) {
	t.cas, t.roots, t.anchors, t.inters, t.layered = cas, roots, roots, nil, false
	for _, c := range cas {
		if !bytes.Equal(c.RawIssuer, c.RawSubject) && slices.ContainsFunc(cas, func(p *x509.Certificate) bool {
			return p != c && c.CheckSignatureFrom(p) == nil
		}) {
			t.inters = append(t.inters, c)
		}
	}
	if len(t.inters) == 0 {
		return
	}
	t.layered, t.anchors = true, x509.NewCertPool()
	for _, c := range cas {
		if !slices.Contains(t.inters, c) {
			t.anchors.AddCert(c)
		}
	}
}

// setCRLs makes l the CRLs of t.
func (t *trust) setCRLs(l loadedCRL) {
	t.crls, t.crlSum, t.crlDelta = l.crls, l.sum, l.delta
	t.crl, t.crlIssuer = l.crls[0].CRL, l.crls[0].Issuer
	for _, c := range l.crls[1:] {
		if c.CRL.NextUpdate().Before(t.crl.NextUpdate()) {
			t.crl, t.crlIssuer = c.CRL, c.Issuer
		}
	}
}

// loadCert is cfg.LoadCert, checked: a leaf, parsed, with its key.
func loadCert(cfg *Config) (tls.Certificate, error) {
	c, err := cfg.LoadCert()
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("loading server certificate: %w", err)
	}
	if len(c.Certificate) == 0 {
		return tls.Certificate{}, fmt.Errorf("loading server certificate: %w", ErrNoLeaf)
	}
	if c.PrivateKey == nil {
		return tls.Certificate{}, fmt.Errorf("loading server certificate: %w", errCertKeyMissing)
	}
	if c.Leaf == nil {
		leaf, err := x509.ParseCertificate(c.Certificate[0])
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("parsing server certificate: %w", err)
		}
		c.Leaf = leaf
	}
	return c, nil
}

// loadedCRL are the CRLs that loaded and verified, each with its issuer,
// the SHA-256 of their bytes, and that of the delta CRL applied (zero for
// none); read is how many bytes were read for them, 0 when the CRLs in use
// were kept without reading.
type loadedCRL struct {
	crls  []revoke.IssuedCRL
	sum   [32]byte
	delta [32]byte
	read  int
}

// loadCRL reads the CRLs (one, or the PEM CRLs of several CAs of a
// hierarchy, one per CA) by revoke.ParseCRLFile, the reader `minica verify`
// shares, applies the delta CRL of a crlsource.DeltaSource (see
// applyDelta), and judges each CRL against the CRL in use of its CA (in
// prev, nil at start) by revoke.MayReplace. Unchanged bytes are not parsed
// again, nor read when the source tells their SHA-256 (crlsource.Summed);
// a CRL with the number of the one in use leaves that one in place.
// Nothing of the bytes is kept: the parsed CRLs and the SHA-256 only.
func loadCRL(cfg *Config, cas []*x509.Certificate, prev *trust, now time.Time) (loadedCRL, error) {
	l, kept, err := readCRLs(cfg, cas, prev)
	if err != nil {
		return loadedCRL{read: l.read}, fmt.Errorf("loading CRL: %w", err)
	}
	if kept {
		l.delta = prev.crlDelta
	}
	if ds, ok := cfg.CRL.(crlsource.DeltaSource); ok {
		applied, err := applyDelta(ds, cfg.parseDelta, &l, prev, kept)
		if err != nil {
			return loadedCRL{read: l.read}, fmt.Errorf("loading CRL: delta CRL: %w", err)
		}
		kept = kept && !applied
	}
	if kept {
		return l, nil
	}
	for i, next := range l.crls {
		var held revoke.IssuedCRL
		if prev != nil {
			held = revoke.CRLOf(prev.crls, next.Issuer)
		}
		replace, err := revoke.MayReplace(next, held, now)
		if err != nil {
			return loadedCRL{read: l.read}, fmt.Errorf("loading CRL: %w", replaceRefusal(err, next, held))
		}
		if !replace {
			l.crls[i] = held
		}
	}
	return l, nil
}

// readCRLs reads and parses the complete CRLs of cfg.CRL; kept says that
// their bytes are those of the CRLs in use, which l then holds as they are.
func readCRLs(cfg *Config, cas []*x509.Certificate, prev *trust) (l loadedCRL, kept bool, err error) {
	unchanged := func(sum [32]byte) bool {
		return prev != nil && sum == prev.crlSum && crlIssuersIn(prev.crls, cas)
	}
	if s, ok := cfg.CRL.(crlsource.Summed); ok {
		if sum, err := s.Sum(); err == nil && unchanged(sum) {
			return loadedCRL{crls: prev.crls, sum: sum}, true, nil
		}
	}
	data, err := cfg.CRL.Current()
	if err != nil {
		return loadedCRL{}, false, err
	}
	l = loadedCRL{sum: sha256.Sum256(data), read: len(data)}
	if unchanged(l.sum) {
		l.crls = prev.crls
		return l, true, nil
	}
	l.crls, err = cfg.parseCRLFile(data, cas)
	return l, false, err
}

// applyDelta applies the delta CRL src holds beside the complete CRL of l
// to it, and reports whether it did: a delta not applied yet (by SHA-256),
// of the CRL of l (src's delta of another one is left to the reload of
// that one), to a single CA's CRL. The delta is read by revoke.ParseDelta
// against that CA and applied by revoke.CRL.WithDelta to the complete CRL
// (of a CRL in use, the one without its delta), which keeps that CRL's
// table, neither copied nor parsed again. A delta of another CA, against a
// later base, or not newer than the complete CRL is an error. parse is
// revoke.ParseDelta but in tests.
func applyDelta(src crlsource.DeltaSource, parse func([]byte, *x509.Certificate) (*revoke.CRL, error), l *loadedCRL, prev *trust, kept bool) (bool, error) {
	data, base := src.Delta()
	sum := sha256.Sum256(data)
	if data == nil || base != l.sum || kept && sum == prev.crlDelta {
		return false, nil
	}
	if len(l.crls) != 1 {
		return false, fmt.Errorf("a delta CRL beside the CRLs of %d CAs; deltas go with one CA's CRL", len(l.crls))
	}
	c, ok := l.crls[0].CRL.(*revoke.CRL)
	if !ok {
		return false, errors.New("the CRL in use takes no delta CRL")
	}
	d, err := parse(data, l.crls[0].Issuer)
	if err != nil {
		return false, err
	}
	combined, err := c.Complete().WithDelta(d)
	if err != nil {
		return false, err
	}
	l.crls = []revoke.IssuedCRL{{CRL: combined, Issuer: l.crls[0].Issuer}}
	l.delta = sum
	return true, nil
}

// completeNumber returns the number of the complete CRL in use, without a
// delta CRL applied to it, in decimal: the base of the next delta CRL. It
// is "" when the CRLs in use are of several CAs, which take no delta.
func (t *trust) completeNumber() string {
	if len(t.crls) != 1 {
		return ""
	}
	c, ok := t.crls[0].CRL.(*revoke.CRL)
	if !ok {
		return ""
	}
	return c.Complete().Number().String()
}

// releaseRead returns to the system the memory of the CRL bytes l read
// (osmem.Release), once they, and the CRLs of the trust replaced, are let
// go. A followed source holds the bytes until its sink has judged them,
// and releases them itself.
func releaseRead(cfg *Config, l loadedCRL) {
	if _, followed := cfg.CRL.(crlsource.Followed); !followed {
		osmem.Release(l.read)
	}
}

// replaceRefusal words a refusal of revoke.MayReplace of next over held with the
// proxy's sentinels, which its callers branch on.
func replaceRefusal(err error, next, held revoke.IssuedCRL) error {
	switch {
	case errors.Is(err, revoke.ErrNotYetValid):
		return fmt.Errorf("%w (%s)", ErrCRLFuture, next.CRL.ThisUpdate().UTC().Format(time.RFC3339))
	case errors.Is(err, revoke.ErrLowerNumber):
		return fmt.Errorf("%w (%s < %s)", ErrCRLOlder, next.CRL.Number(), held.CRL.Number())
	case errors.Is(err, revoke.ErrExpired):
		return fmt.Errorf("%w (nextUpdate %s), and the CRL in use (number %s) is current until %s", ErrCRLExpired,
			next.CRL.NextUpdate().UTC().Format(time.RFC3339), held.CRL.Number(), held.CRL.NextUpdate().UTC().Format(time.RFC3339))
	}
	return err
}

// crlIssuersIn reports whether the issuer of every CRL of crls is in cas.
func crlIssuersIn(crls []revoke.IssuedCRL, cas []*x509.Certificate) bool {
	for _, c := range crls {
		if !slices.ContainsFunc(cas, c.Issuer.Equal) {
			return false
		}
	}
	return true
}

// crlState is the state of the CRL at now by revoke.Freshness, past
// nextUpdate by at most grace, and before thisUpdate by at most clockSkew:
// the one freshness rule, as revoke.Judge applies it to every client.
func crlState(crl Revocations, grace time.Duration, now time.Time) revoke.CRLState {
	return revoke.Freshness(crl.ThisUpdate().Add(-clockSkew), crl.NextUpdate(), revoke.Thresholds{Grace: grace}, now)
}

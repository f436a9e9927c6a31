package ca

import (
	"bufio"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"math/big"
	"strings"
	"time"

	"minica/revoke"
)

// Files of the published CRL, relative to the CA directory.
const (
	CRLPEMFile    = "crl.pem"   // the current CRL, PEM ("X509 CRL")
	CRLDERFile    = "crl.der"   // the same CRL, DER
	crlNumberFile = "crlnumber" // the last CRL number used, decimal
)

// ExpiredGrace is how long a revoked certificate stays on the CRL after it
// expires. RFC 5280 section 3.3 lets a CA drop expired certificates; keeping
// them a while longer lets clocks that lag, and checks of past signatures,
// still see the revocation.
const ExpiredGrace = 90 * 24 * time.Hour

// ErrNoCRL is returned by LoadCRL when the CA has no published CRL.
var ErrNoCRL = errors.New("no CRL published")

// CRLInfo describes a published CRL.
type CRLInfo struct {
	Number                 *big.Int
	ThisUpdate, NextUpdate time.Time
	Entries                int
	DER                    []byte
	PEMFile, DERFile       string // paths, for messages
}

// PublishCRL signs a new CRL with signer and writes it as crl.pem and
// crl.der, atomically. The caller must hold the lock (see Lock).
//
// thisUpdate is Now(); nextUpdate is thisUpdate plus lifetime, or plus the
// CA's CRL lifetime setting when lifetime is 0. The CRL number is the
// signing time in milliseconds since 1970, raised if need be to one more than
// both the number file and the published CRL (see nextCRLNumber). The number
// file is written first, then crl.pem (what web servers read), then crl.der
// (what minica reads): after a crash between the two, minica sees the older
// CRL, reports its revocations as unpublished, and Check makes the pair agree.
// It lists every revoked certificate except those expired for longer than
// ExpiredGrace; a revocation recorded after thisUpdate (the clock went back)
// is listed at thisUpdate.
func (c *CA) PublishCRL(signer crypto.Signer, lifetime time.Duration) (*CRLInfo, error) {
	if lifetime == 0 {
		lifetime = time.Duration(c.Settings.CRLLifetime)
	}
	clock := c.Now()
	now := clock.UTC().Truncate(time.Second)
	number, err := c.nextCRLNumber(clock)
	if err != nil {
		return nil, err
	}
	if err := c.saveCRLNumber(number); err != nil {
		return nil, err
	}
	if err := c.crashed(crlNumberFile); err != nil {
		return nil, err
	}
	events, err := c.revokedState()
	if err != nil {
		return nil, err
	}
	count := 0
	der, err := revoke.Build(revoke.Params{
		Issuer: c.Cert, Signer: signer, Number: number,
		ThisUpdate: now, NextUpdate: now.Add(lifetime), ExpectedEntries: len(events),
	}, crlEntries(events, now, &count))
	if err != nil {
		return nil, err
	}
	if c.db != nil {
		saved, err := c.db.saveCRL(number, der)
		if err != nil {
			return nil, err
		}
		if err := c.crashed("store"); err != nil {
			return nil, err
		}
		// The files are the published copy: one that lost the race to a
		// higher number leaves them to its winner.
		if !saved {
			return &CRLInfo{Number: number, ThisUpdate: now, NextUpdate: now.Add(lifetime), Entries: count, DER: der,
				PEMFile: c.dir.Join(CRLPEMFile), DERFile: c.dir.Join(CRLDERFile)}, nil
		}
	}
	if err := c.writeCRLFiles(der); err != nil {
		return nil, err
	}
	return &CRLInfo{Number: number, ThisUpdate: now, NextUpdate: now.Add(lifetime), Entries: count, DER: der,
		PEMFile: c.dir.Join(CRLPEMFile), DERFile: c.dir.Join(CRLDERFile)}, nil
}

// saveCRLNumber makes number the last CRL number used, durably. The
// database reserved it already (see database.nextCRLNumber).
func (c *CA) saveCRLNumber(number *big.Int) error {
	if c.db != nil {
		return nil
	}
	if err := c.dir.WriteAtomic(crlNumberFile, []byte(number.String()+"\n"), 0o644); err != nil {
		return fmt.Errorf("saving the CRL number: %w", err)
	}
	return nil
}

// writeCRLFiles writes crl.pem, then crl.der, then (in an intermediate)
// crl-chain.pem.
func (c *CA) writeCRLFiles(der []byte) error {
	if err := c.writePEMAtomic(CRLPEMFile, der); err != nil {
		return err
	}
	if err := c.crashed(CRLPEMFile); err != nil {
		return err
	}
	if err := c.dir.WriteAtomic(CRLDERFile, der, 0o644); err != nil {
		return err
	}
	if err := c.crashed(CRLDERFile); err != nil {
		return err
	}
	return c.writeCRLChain()
}

// crlEntries yields the entries of the next CRL from the revoked events of
// the log, counting them in *count. One big.Int holds every serial in turn:
// Build copies it before asking for the next entry, and a million small
// allocations would double the garbage of a large CRL.
func crlEntries(events []logEvent, thisUpdate time.Time, count *int) iter.Seq[revoke.Entry] {
	return func(yield func(revoke.Entry) bool) {
		serial := new(big.Int)
		for i := range events {
			ev := &events[i]
			notAfter, at := unixTime(ev.notAfter), unixTime(ev.revokedAt)
			if thisUpdate.Sub(notAfter) > ExpiredGrace {
				continue
			}
			if at.After(thisUpdate) {
				at = thisUpdate
			}
			*count++
			if !yield(revoke.Entry{Serial: serial.SetBytes(ev.serial[:]), RevokedAt: at, Reason: revoke.Reason(ev.reason)}) {
				return
			}
		}
	}
}

// writePEMAtomic replaces name with the PEM form of der as WriteAtomic
// does, encoding it straight into the file: a CRL of a million entries
// would otherwise hold 65 MB of PEM in memory next to its DER.
func (c *CA) writePEMAtomic(name string, der []byte) error {
	return c.dir.WriteAtomicFrom(name, 0o644, func(f io.Writer) error {
		w := bufio.NewWriterSize(f, 256<<10)
		if err := pem.Encode(w, &pem.Block{Type: "X509 CRL", Bytes: der}); err != nil {
			return err
		}
		return w.Flush()
	})
}

// crashed calls the test hook crashAfter, if set, after file was written.
func (c *CA) crashed(file string) error {
	if c.crashAfter == nil {
		return nil
	}
	return c.crashAfter(file)
}

// nextCRLNumber returns the number of a CRL signed at now: now in
// milliseconds since 1970, or one more than the larger of the number file
// and the published CRL's number when that is greater (a missing file counts
// as 0). Numbers taken from the clock keep growing after an older copy of
// the directory is restored, so that servers holding a later CRL accept the
// next one (they refuse a lower number, RFC 5280 5.2.3); the counter keeps
// them growing when the clock goes back, or when several CRLs are signed in
// one millisecond. Milliseconds, not finer, keep the number exact where it
// becomes a float64 (Prometheus metrics, JSON readers), and within 6 octets
// for ages, well within the 20 allowed.
func (c *CA) nextCRLNumber(now time.Time) (*big.Int, error) {
	if c.db != nil {
		return c.db.nextCRLNumber(now)
	}
	last := new(big.Int)
	data, err := c.dir.ReadFile(crlNumberFile)
	switch {
	case err == nil:
		if _, ok := last.SetString(strings.TrimSpace(string(data)), 10); !ok || last.Sign() < 0 {
			return nil, fmt.Errorf("corrupt CRL number file %q", c.dir.Join(crlNumberFile))
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("reading the CRL number: %w", err)
	}
	published, err := c.publishedCRLNumber()
	if err != nil {
		return nil, err
	}
	if published != nil && published.Cmp(last) > 0 {
		last = published
	}
	last.Add(last, big.NewInt(1))
	if fromClock := big.NewInt(now.UnixMilli()); fromClock.Cmp(last) > 0 {
		return fromClock, nil
	}
	return last, nil
}

// publishedCRLNumber returns the number of the published CRL, verified as
// LoadCRL does but without reading its entries, or nil when there is none.
func (c *CA) publishedCRLNumber() (*big.Int, error) {
	data, err := c.readCRLDER()
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading CRL %q: %w", c.crlName(), err)
	}
	n, err := revoke.CRLNumber(data, c.Cert)
	if err != nil {
		return nil, fmt.Errorf("reading CRL %q: %w", c.crlName(), err)
	}
	return n, nil
}

// LoadCRL reads and verifies the published CRL (crl.der) against the CA
// certificate. It gives an error matching ErrNoCRL when none exists, and
// the revoke package's sentinels for a corrupt or foreign one. Its dates are
// not checked; see revoke.Freshness.
func (c *CA) LoadCRL() (*revoke.CRL, error) {
	crl, _, err := c.loadCRL()
	return crl, err
}

// loadCRL is LoadCRL that also gives the CRL's DER.
func (c *CA) loadCRL() (*revoke.CRL, []byte, error) {
	der, err := c.readCRLDER()
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("%w in %q", ErrNoCRL, c.crlWhere())
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading CRL %q: %w", c.crlName(), err)
	}
	crl, err := parseCRLFile(der, c.Cert)
	if err != nil {
		return nil, nil, fmt.Errorf("reading CRL %q: %w", c.crlName(), err)
	}
	return crl, der, nil
}

// parseCRLFile reads the CRL file data of issuer with revoke.ParseCRLFile,
// the reader of the proxy, so that verify and the proxy agree on every
// crl.der: it must hold one CRL, of issuer.
func parseCRLFile(data []byte, issuer *x509.Certificate) (*revoke.CRL, error) {
	crls, err := revoke.ParseCRLFile(data, []*x509.Certificate{issuer})
	if err != nil {
		return nil, err
	}
	return crls[0].CRL.(*revoke.CRL), nil // one CA: one CRL, from ParseCRL
}

// readCRLDER reads the current CRL, DER; an error matching fs.ErrNotExist
// when none was published.
func (c *CA) readCRLDER() ([]byte, error) {
	if c.db == nil {
		return c.dir.ReadFile(CRLDERFile)
	}
	der, err := c.db.loadCRL()
	if err == nil && der == nil {
		err = fs.ErrNotExist
	}
	return der, err
}

// crlName names the current CRL, for messages.
func (c *CA) crlName() string {
	if c.db != nil {
		return c.db.String()
	}
	return c.dir.Join(CRLDERFile)
}

// crlWhere names where the current CRL is kept, for messages.
func (c *CA) crlWhere() string {
	if c.db != nil {
		return c.db.String()
	}
	return c.dir.Path()
}

// Unpublished returns, in serial order, the serials of the certificates
// that the revocation log holds revoked but crl does not list with that
// reason: revocations whose publishing was interrupted (a wrong CA key
// password, a kill, a full disk). Certificates expired for longer than
// ExpiredGrace at Now() are left out, as PublishCRL leaves them off.
func (c *CA) Unpublished(crl *revoke.CRL) ([]string, error) {
	events, err := c.revokedState()
	if err != nil {
		return nil, err
	}
	now := c.Now()
	var out []string
	serial := new(big.Int)
	for i := range events {
		ev := &events[i]
		if now.Sub(unixTime(ev.notAfter)) > ExpiredGrace {
			continue
		}
		if e, ok := crl.Lookup(serial.SetBytes(ev.serial[:])); !ok || e.Reason != revoke.Reason(ev.reason) {
			out = append(out, ev.hex())
		}
	}
	return out, nil
}

// onCRL reports whether the published CRL lists the revoked rec with its
// reason, or need not list it (expired for longer than ExpiredGrace). A
// missing or unreadable CRL lists nothing.
func (c *CA) onCRL(rec *Record) bool {
	if c.Now().Sub(rec.NotAfter) > ExpiredGrace {
		return true
	}
	crl, err := c.LoadCRL()
	if err != nil {
		return false
	}
	serial, err := ParseSerial(rec.Serial)
	if err != nil {
		return false
	}
	e, ok := crl.Lookup(serial)
	return ok && e.Reason.String() == rec.Reason
}

// LoggedRevocation returns the revocation of serial as the revocation log
// holds it, or nil when the log does not hold it revoked. The log is written
// before the record and the CRL, so it knows of a revocation that an
// interrupted revoke did not publish.
func (c *CA) LoggedRevocation(serial *big.Int) (*revoke.Entry, error) {
	events, err := c.revokedState()
	if err != nil {
		return nil, err
	}
	s := new(big.Int)
	for i := range events {
		ev := &events[i]
		if s.SetBytes(ev.serial[:]).Cmp(serial) == 0 {
			return &revoke.Entry{Serial: new(big.Int).Set(serial), RevokedAt: unixTime(ev.revokedAt), Reason: revoke.Reason(ev.reason)}, nil
		}
	}
	return nil, nil
}

package file

import (
	"bytes"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"strings"
	"time"

	"minica/ca/store"
	"minica/revoke"
)

// The file store's current CRL is the published copy itself: crl.pem and
// crl.der, written in that order. Its number is reserved in crlnumber
// before the CRL is signed. The current delta CRL is DeltaCRLFile (see
// delta.go).

// LastCRLNumber reads crlnumber (0 when it is missing).
func (s *Store) LastCRLNumber() (*big.Int, error) {
	last := new(big.Int)
	data, err := s.dir.ReadFile(CRLNumberFile)
	if errors.Is(err, fs.ErrNotExist) {
		return last, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the CRL number: %w", err)
	}
	if _, ok := last.SetString(strings.TrimSpace(string(data)), 10); !ok || last.Sign() < 0 {
		return nil, fmt.Errorf("corrupt CRL number file %q", s.dir.Join(CRLNumberFile))
	}
	return last, nil
}

// NextCRLNumber returns the number of a CRL signed at now, and saves it
// durably in crlnumber. It is now in milliseconds since 1970, or one more
// than the larger of crlnumber and the published CRL's number when that
// is greater (a missing file counts as 0). Numbers taken from the clock
// keep growing after an older copy of the directory is restored, so that
// servers holding a later CRL accept the next one (they refuse a lower
// number, RFC 5280 5.2.3); the counter keeps them growing when the clock
// goes back, or when several CRLs are signed in one millisecond.
// Milliseconds, not finer, keep the number exact where it becomes a
// float64 (Prometheus metrics, JSON readers), and within 6 octets for
// ages, well within the 20 allowed.
func (s *Store) NextCRLNumber(now time.Time) (*big.Int, error) {
	last, err := s.LastCRLNumber()
	if err != nil {
		return nil, err
	}
	published, err := s.publishedCRLNumber(last)
	if err != nil {
		return nil, err
	}
	if published != nil && published.Cmp(last) > 0 {
		last = published
	}
	next := last.Add(last, big.NewInt(1))
	if fromClock := big.NewInt(now.UnixMilli()); fromClock.Cmp(next) > 0 {
		next = fromClock
	}
	if err := s.dir.WriteAtomic(CRLNumberFile, []byte(next.String()+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("saving the CRL number: %w", err)
	}
	return next, nil
}

// publishedCRLNumber returns the number of the published CRL when it is
// above last, verified as LoadCRL does but without reading its entries,
// or nil when there is none or it is not above last. The number is first
// read unverified (revoke.PeekCRLNumber: a few kilobytes of a 50 MB CRL),
// since it is at most last unless the number file was restored older
// than crl.der; the CRL is read and verified only when it is not.
func (s *Store) publishedCRLNumber(last *big.Int) (*big.Int, error) {
	if peeked, err := s.peekCRLNumber(); err == nil && peeked.Cmp(last) <= 0 {
		return nil, nil
	}
	data, err := s.CRL()
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading CRL %q: %w", s.CRLName(), err)
	}
	n, err := revoke.CRLNumber(data, s.cert)
	if err != nil {
		return nil, fmt.Errorf("reading CRL %q: %w", s.CRLName(), err)
	}
	return n, nil
}

// peekCRLNumber reads the number of crl.der unverified.
func (s *Store) peekCRLNumber() (*big.Int, error) {
	f, err := s.dir.Open(store.CRLDERFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return revoke.PeekCRLNumber(f, st.Size())
}

// SaveCRL writes the CRL files, which are the file store's current CRL,
// unless number is below the last one reserved: under the lock, which
// orders every writer, a CRL numbered by NextCRLNumber is always saved.
func (s *Store) SaveCRL(number *big.Int, der []byte) (bool, error) {
	last, err := s.LastCRLNumber()
	if err != nil {
		return false, err
	}
	if number.Cmp(last) < 0 {
		return false, nil
	}
	if err := store.WriteCRLCopy(s.dir, der, s.crash); err != nil {
		return false, err
	}
	return true, nil
}

// CRL reads crl.der.
func (s *Store) CRL() ([]byte, error) { return s.dir.ReadFile(store.CRLDERFile) }

// ReadCRL reads crl.der, which must be a regular file, the one that
// CRLStamp names.
func (s *Store) ReadCRL() (*store.PublishedCRL, error) {
	return store.ReadCRLFile(s.dir, store.CRLDERFile, store.ErrNoCRL, s.cert)
}

// CRLStamp is the stamp of crl.der.
func (s *Store) CRLStamp() (store.FileStamp, error) {
	return store.FileCRLStamp(s.dir, store.CRLDERFile, store.ErrNoCRL)
}

// CRLName is the path of crl.der.
func (s *Store) CRLName() string { return s.dir.Join(store.CRLDERFile) }

// CRLApart is false: crl.pem and crl.der are the current CRL.
func (s *Store) CRLApart() bool { return false }

// CheckCRL rewrites the delta CRL's published copy from DeltaCRLFile
// where a crash left it behind (store.CheckDeltaCRLCopy), then makes
// crl.pem and crl.der agree (checkCompleteCRL).
func (s *Store) CheckCRL(fixed, problem func(string)) (*revoke.CRL, error) {
	if err := store.CheckDeltaCRLCopy(s, s.dir, s.crash, fixed, problem); err != nil {
		return nil, err
	}
	return s.checkCompleteCRL(fixed, problem)
}

// checkCompleteCRL makes crl.pem and crl.der agree, and returns the CRL
// they hold, or nil (reported) when neither holds a CRL of this CA.
// SaveCRL writes crl.pem first, so after a crash crl.pem can be newer than
// crl.der; a copy written by hand or an older minica can be either. The
// file with the higher CRL number wins, and a missing or unreadable one is
// rewritten from the other.
func (s *Store) checkCompleteCRL(fixed, problem func(string)) (*revoke.CRL, error) {
	derCRL, _, derErr := store.LoadCRL(s, s.cert)
	derData, _ := s.dir.ReadFile(store.CRLDERFile)
	var pemCRL *revoke.CRL
	var pemDER []byte
	pemData, pemErr := s.dir.ReadFile(store.CRLPEMFile)
	if pemErr == nil {
		block, _ := pem.Decode(pemData)
		if block == nil || block.Type != "X509 CRL" {
			pemErr = errors.New("no X509 CRL PEM block")
		} else if pemCRL, pemErr = revoke.ParseCRL(block.Bytes, s.cert); pemErr == nil {
			pemDER = block.Bytes
		}
	}
	switch {
	case derErr != nil && pemErr != nil:
		problem(derErr.Error())
		return nil, nil
	case derErr == nil && pemErr == nil && bytes.Equal(derData, pemDER):
		return derCRL, nil
	case pemErr != nil || (derErr == nil && derCRL.Number().Cmp(pemCRL.Number()) >= 0):
		if err := store.WritePEMAtomic(s.dir, store.CRLPEMFile, derData); err != nil {
			return nil, err
		}
		fixed(fmt.Sprintf("rewrote %s from %s (CRL %s): it was missing, unreadable or older", store.CRLPEMFile, store.CRLDERFile, derCRL.Number()))
		return derCRL, nil
	default:
		if err := s.dir.WriteAtomic(store.CRLDERFile, pemDER, 0o644); err != nil {
			return nil, err
		}
		fixed(fmt.Sprintf("rewrote %s from %s (CRL %s): it was missing, unreadable or older", store.CRLDERFile, store.CRLPEMFile, pemCRL.Number()))
		return pemCRL, nil
	}
}

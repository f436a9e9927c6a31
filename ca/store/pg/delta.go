package pg

import (
	"context"
	"fmt"
	"math/big"

	"minica/ca/store"
)

// The current delta CRL is kept in the row of minica_crl beside the
// current CRL (delta_number, delta_der, delta_version); its published
// copy, crl-delta.pem and crl-delta.der, is written after the transaction
// commits, and CheckCRL rewrites a copy that a crash left behind.

// SaveDeltaCRL stores der as the current delta CRL unless a higher number
// is current, notifying channel minica_crl (payload "delta NUMBER"), and
// then writes the published copy.
func (s *Store) SaveDeltaCRL(number *big.Int, der []byte) (bool, error) {
	if err := store.CheckDeltaToSave(number, der); err != nil {
		return false, err
	}
	return s.saveThenCopy(saveDelta, number, der, store.WriteDeltaCRLCopy)
}

// DeltaCRL reads the current delta CRL and its number.
func (s *Store) DeltaCRL() ([]byte, *big.Int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	var der []byte
	var text *string
	if err := s.pool.QueryRow(ctx, "SELECT delta_der, delta_number::text FROM minica_crl WHERE id = 1").Scan(&der, &text); err != nil {
		return nil, nil, fmt.Errorf("reading the delta CRL from %q: %w", s.url, err)
	}
	if der == nil || text == nil {
		return nil, nil, fmt.Errorf("%w in %q", store.ErrNoDeltaCRL, s.url)
	}
	number, ok := new(big.Int).SetString(*text, 10)
	if !ok {
		return nil, nil, fmt.Errorf("reading the delta CRL from %q: corrupt CRL number %q", s.url, *text)
	}
	return der, number, nil
}

// DeltaCRLStamp is the version of the current delta CRL in its row.
func (s *Store) DeltaCRLStamp() (store.FileStamp, error) {
	return s.crlStamp("SELECT delta_version, length(delta_der) FROM minica_crl WHERE id = 1", "the delta CRL", store.ErrNoDeltaCRL)
}

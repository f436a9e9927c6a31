//go:build interop

package ca

import "testing"

// The searches read the records through the store interface: on
// PostgreSQL they find what they find on files.

func TestRecordsByEmailPG(t *testing.T) {
	c, signer, _ := newPGCA(t)
	testRecordsByEmail(t, c, signer)
}

func TestRecordsByNamePrefixPG(t *testing.T) {
	c, signer, _ := newPGCA(t)
	testRecordsByNamePrefix(t, c, signer)
}

func TestSettledRecordsPG(t *testing.T) {
	c, signer, _ := newPGCA(t)
	testSettledRecords(t, c, signer)
}

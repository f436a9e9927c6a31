package ca

import (
	"fmt"
	"minica/ca/store"
)

// ErrNotRegular is returned by ReadPublishedCRL and CRLStamp when crl.der
// is not a regular file: a symlink planted in the CA directory could
// otherwise hand out another file of it (the CA key) as the CRL.
var ErrNotRegular = store.ErrNotRegular

// FileStamp identifies one version of a file cheaply (see store.FileStamp).
type FileStamp = store.FileStamp

// PublishedCRL is the published CRL as ReadPublishedCRL read it.
type PublishedCRL = store.PublishedCRL

// CRLStamp returns the stamp of crl.der without reading it, so that a
// long-running reader polls for a CRL published by another process at the
// cost of one lstat. A symlink gives an error matching ErrNotRegular, with
// the stamp of the link itself; a missing file one matching ErrNoCRL.
func (c *CA) CRLStamp() (FileStamp, error) { return c.db.CRLStamp() }

// ReadPublishedCRL reads crl.der and verifies it as LoadCRL does, keeping
// its DER. Unlike LoadCRL it follows no symlink: crl.der must be a regular
// file, and the file opened must be the one that was checked (an error
// matching ErrNotRegular otherwise), so that nothing but a CRL signed by
// the CA ever comes out of it.
func (c *CA) ReadPublishedCRL() (*PublishedCRL, error) { return c.db.ReadCRL() }

// RootCRLStamp is CRLStamp for the root CRL an intermediate keeps
// (root-crl.der); a missing file gives an error matching ErrNoRootCRL.
func (c *CA) RootCRLStamp() (FileStamp, error) {
	return store.FileCRLStamp(c.dir, RootCRLDERFile, ErrNoRootCRL)
}

// ReadRootCRL is ReadPublishedCRL for the root CRL an intermediate keeps
// (root-crl.der), verified against the root certificate.
func (c *CA) ReadRootCRL() (*PublishedCRL, error) {
	if !c.IsIntermediate() {
		return nil, fmt.Errorf("%w: %q is not an intermediate CA", ErrNoRootCRL, c.dir.Path())
	}
	return store.ReadCRLFile(c.dir, RootCRLDERFile, ErrNoRootCRL, c.Root())
}

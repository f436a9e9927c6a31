package ca

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"minica/internal/regfile"
	"minica/revoke"
)

// ErrNotRegular is returned by ReadPublishedCRL and CRLStamp when crl.der
// is not a regular file: a symlink planted in the CA directory could
// otherwise hand out another file of it (the CA key) as the CRL.
var ErrNotRegular = regfile.ErrNotRegular

// FileStamp identifies one version of a file cheaply: a file replaced
// atomically gets a new inode, and one rewritten in place a new size or
// modification time. Equal stamps mean, as far as stat can tell, the same
// content.
type FileStamp struct {
	Ino   uint64
	Size  int64
	MTime int64 // modification time, nanoseconds since 1970
}

func stampOf(info fs.FileInfo) FileStamp {
	return FileStamp{Ino: inodeOf(info), Size: info.Size(), MTime: info.ModTime().UnixNano()}
}

// PublishedCRL is the published CRL as ReadPublishedCRL read it.
type PublishedCRL struct {
	CRL   *revoke.CRL
	DER   []byte    // the CRL's DER, as served over HTTP
	Stamp FileStamp // the version of crl.der it was read from
}

// CRLStamp returns the stamp of crl.der without reading it, so that a
// long-running reader polls for a CRL published by another process at the
// cost of one lstat. A symlink gives an error matching ErrNotRegular, with
// the stamp of the link itself; a missing file one matching ErrNoCRL.
func (c *CA) CRLStamp() (FileStamp, error) { return c.db.CRLStamp() }

// fileCRLStamp is the stamp of the CRL file in d; a missing one gives an
// error matching missing.
func fileCRLStamp(d *Dir, file string, missing error) (FileStamp, error) {
	info, err := d.Root().Lstat(file)
	if errors.Is(err, fs.ErrNotExist) {
		return FileStamp{}, fmt.Errorf("%w in %q", missing, d.Path())
	}
	if err != nil {
		return FileStamp{}, fmt.Errorf("reading CRL %q: %w", d.Join(file), err)
	}
	if !info.Mode().IsRegular() {
		return stampOf(info), fmt.Errorf("reading CRL %q: %w (%s)", d.Join(file), ErrNotRegular, info.Mode().Type())
	}
	return stampOf(info), nil
}

// ReadPublishedCRL reads crl.der and verifies it as LoadCRL does, keeping
// its DER. Unlike LoadCRL it follows no symlink: crl.der must be a regular
// file, and the file opened must be the one that was checked (an error
// matching ErrNotRegular otherwise), so that nothing but a CRL signed by
// the CA ever comes out of it.
func (c *CA) ReadPublishedCRL() (*PublishedCRL, error) { return c.db.ReadCRL() }

// RootCRLStamp is CRLStamp for the root CRL an intermediate keeps
// (root-crl.der); a missing file gives an error matching ErrNoRootCRL.
func (c *CA) RootCRLStamp() (FileStamp, error) {
	return fileCRLStamp(c.dir, RootCRLDERFile, ErrNoRootCRL)
}

// ReadRootCRL is ReadPublishedCRL for the root CRL an intermediate keeps
// (root-crl.der), verified against the root certificate.
func (c *CA) ReadRootCRL() (*PublishedCRL, error) {
	if !c.IsIntermediate() {
		return nil, fmt.Errorf("%w: %q is not an intermediate CA", ErrNoRootCRL, c.dir.Path())
	}
	return readCRLFile(c.dir, RootCRLDERFile, ErrNoRootCRL, c.Root())
}

// readCRLFile reads the CRL file in d, verified against issuer: a regular
// file, the one whose stamp was taken; a missing one gives an error
// matching missing.
func readCRLFile(d *Dir, file string, missing error, issuer *x509.Certificate) (*PublishedCRL, error) {
	name := d.Join(file)
	stamp, err := fileCRLStamp(d, file, missing)
	if err != nil {
		return nil, err
	}
	f, err := d.Open(file)
	if err != nil {
		return nil, fmt.Errorf("reading CRL %q: %w", name, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading CRL %q: %w", name, err)
	}
	if !info.Mode().IsRegular() || stampOf(info) != stamp {
		return nil, fmt.Errorf("reading CRL %q: %w (replaced while opened)", name, ErrNotRegular)
	}
	// One buffer of the file's size: a CRL of a million entries is 40 MB,
	// and io.ReadAll's doublings would peak at twice that.
	data := make([]byte, info.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, fmt.Errorf("reading CRL %q: %w", name, err)
	}
	crl, err := revoke.ParseCRL(data, issuer)
	if err != nil {
		return nil, fmt.Errorf("reading CRL %q: %w", name, err)
	}
	if block, _ := pem.Decode(data); block != nil {
		data = block.Bytes
	}
	return &PublishedCRL{CRL: crl, DER: data, Stamp: stamp}, nil
}

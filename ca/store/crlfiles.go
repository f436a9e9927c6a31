package store

import (
	"bufio"
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/big"

	"minica/internal/cadir"
	"minica/internal/regfile"
	"minica/revoke"
)

// Files of the published CRL, relative to the CA directory.
const (
	CRLPEMFile = "crl.pem" // the current CRL, PEM ("X509 CRL")
	CRLDERFile = "crl.der" // the same CRL, DER
	// CRLNumberFile holds the file store's last CRL number reserved, in
	// decimal; a store that adopts a new CA's first CRL removes it.
	CRLNumberFile = "crlnumber"
	// DeltaCRLPEMFile and DeltaCRLDERFile are the published copy of the
	// current delta CRL (RFC 5280 section 5.2.4), written by SaveDeltaCRL
	// in that order, as the complete CRL's files are.
	DeltaCRLPEMFile = "crl-delta.pem"
	DeltaCRLDERFile = "crl-delta.der"
)

// ErrNoCRL is returned when the CA has no published CRL.
var ErrNoCRL = errors.New("no CRL published")

// ErrNoDeltaCRL is returned when the store holds no delta CRL; it matches
// fs.ErrNotExist.
var ErrNoDeltaCRL error = noDeltaCRL{}

type noDeltaCRL struct{}

func (noDeltaCRL) Error() string        { return "no delta CRL saved" }
func (noDeltaCRL) Is(target error) bool { return target == fs.ErrNotExist }

// ErrNotRegular is returned by the file store's ReadCRL and CRLStamp when
// crl.der is not a regular file: a symlink planted in the CA directory could
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

// StampOf returns the stamp of the file info describes.
func StampOf(info fs.FileInfo) FileStamp {
	return FileStamp{Ino: inodeOf(info), Size: info.Size(), MTime: info.ModTime().UnixNano()}
}

// PublishedCRL is the current CRL as ReadCRL read it.
type PublishedCRL struct {
	CRL   *revoke.CRL
	DER   []byte    // the CRL's DER, as served over HTTP
	Stamp FileStamp // the version of crl.der it was read from
}

// FileCRLStamp is the stamp of the CRL file in d; a missing one gives an
// error matching missing.
func FileCRLStamp(d *cadir.Dir, file string, missing error) (FileStamp, error) {
	info, err := d.Root().Lstat(file)
	if errors.Is(err, fs.ErrNotExist) {
		return FileStamp{}, fmt.Errorf("%w in %q", missing, d.Path())
	}
	if err != nil {
		return FileStamp{}, fmt.Errorf("reading CRL %q: %w", d.Join(file), err)
	}
	if !info.Mode().IsRegular() {
		return StampOf(info), fmt.Errorf("reading CRL %q: %w (%s)", d.Join(file), ErrNotRegular, info.Mode().Type())
	}
	return StampOf(info), nil
}

// ReadCRLFile reads the CRL file in d, verified against issuer: a regular
// file, the one whose stamp was taken; a missing one gives an error
// matching missing.
func ReadCRLFile(d *cadir.Dir, file string, missing error, issuer *x509.Certificate) (*PublishedCRL, error) {
	name := d.Join(file)
	stamp, err := FileCRLStamp(d, file, missing)
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
	if !info.Mode().IsRegular() || StampOf(info) != stamp {
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

// WriteCRLCopy writes der as the published copy of the current CRL in d:
// crl.pem (what web servers read), then crl.der (what minica reads), each
// atomically, calling crashed after each.
func WriteCRLCopy(d *cadir.Dir, der []byte, crashed func(file string) error) error {
	return writeCopy(d, CRLPEMFile, CRLDERFile, der, crashed)
}

// WriteDeltaCRLCopy writes der as the published copy of the current delta
// CRL in d, crl-delta.pem then crl-delta.der, as WriteCRLCopy does.
func WriteDeltaCRLCopy(d *cadir.Dir, der []byte, crashed func(file string) error) error {
	return writeCopy(d, DeltaCRLPEMFile, DeltaCRLDERFile, der, crashed)
}

// writeCopy writes der into pemFile, then derFile, each atomically and
// 0644, calling crashed after each.
func writeCopy(d *cadir.Dir, pemFile, derFile string, der []byte, crashed func(file string) error) error {
	if err := WritePEMAtomic(d, pemFile, der); err != nil {
		return err
	}
	if err := crashed(pemFile); err != nil {
		return err
	}
	if err := d.WriteAtomic(derFile, der, 0o644); err != nil {
		return err
	}
	return crashed(derFile)
}

// CheckDeltaToSave checks what is given to SaveDeltaCRL (or Load): a CRL
// number of at least 0, and some bytes of DER, which it does not judge.
func CheckDeltaToSave(number *big.Int, der []byte) error {
	if number == nil || number.Sign() < 0 || len(der) == 0 {
		return fmt.Errorf("saving a delta CRL: want a CRL number of at least 0 and the CRL's DER, got number %v and %d bytes", number, len(der))
	}
	return nil
}

// CopyHolds reports whether pemFile and derFile in d both hold der: a
// missing, unreadable or other file is false.
func CopyHolds(d *cadir.Dir, pemFile, derFile string, der []byte) bool {
	fileDER, err := d.ReadFile(derFile)
	if err != nil || !bytes.Equal(fileDER, der) {
		return false
	}
	pemData, err := d.ReadFile(pemFile)
	if err != nil {
		return false
	}
	block, _ := pem.Decode(pemData)
	return block != nil && block.Type == "X509 CRL" && bytes.Equal(block.Bytes, der)
}

// CheckDeltaCRLCopy makes the published copy of db's current delta CRL in
// d (crl-delta.pem and crl-delta.der) hold it, rewriting a missing or stale
// one (what a crash between saving the delta and writing its copy leaves)
// and calling fixed. A store without a delta leaves the files as they are;
// one whose delta cannot be read is a problem, and the files stay.
func CheckDeltaCRLCopy(db CRLStore, d *cadir.Dir, crashed func(file string) error, fixed, problem func(string)) error {
	der, number, err := db.DeltaCRL()
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		problem(err.Error())
		return nil
	}
	if CopyHolds(d, DeltaCRLPEMFile, DeltaCRLDERFile, der) {
		return nil
	}
	if err := WriteDeltaCRLCopy(d, der, crashed); err != nil {
		return err
	}
	fixed(fmt.Sprintf("rewrote %s and %s from the store (delta CRL %s): they were missing or stale", DeltaCRLPEMFile, DeltaCRLDERFile, number))
	return nil
}

// WritePEMAtomic replaces name with the PEM form of der as WriteAtomic
// does, encoding it straight into the file: a CRL of a million entries
// would otherwise hold 65 MB of PEM in memory next to its DER.
func WritePEMAtomic(d *cadir.Dir, name string, der []byte) error {
	return d.WriteAtomicFrom(name, 0o644, func(f io.Writer) error {
		w := bufio.NewWriterSize(f, 256<<10)
		if err := pem.Encode(w, &pem.Block{Type: "X509 CRL", Bytes: der}); err != nil {
			return err
		}
		return w.Flush()
	})
}

// LoadCRL reads and verifies the current CRL of db against issuer.
func LoadCRL(db Store, issuer *x509.Certificate) (*revoke.CRL, []byte, error) {
	der, err := db.CRL()
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("%w in %q", ErrNoCRL, db.String())
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading CRL %q: %w", db.CRLName(), err)
	}
	crl, err := ParseCRLFile(der, issuer)
	if err != nil {
		return nil, nil, fmt.Errorf("reading CRL %q: %w", db.CRLName(), err)
	}
	return crl, der, nil
}

// ParseCRLFile reads the CRL file data of issuer with revoke.ParseCRLFile,
// the reader of the proxy, so that verify and the proxy agree on every
// crl.der: it must hold one CRL, of issuer.
func ParseCRLFile(data []byte, issuer *x509.Certificate) (*revoke.CRL, error) {
	crls, err := revoke.ParseCRLFile(data, []*x509.Certificate{issuer})
	if err != nil {
		return nil, err
	}
	return crls[0].CRL.(*revoke.CRL), nil // one CA: one CRL, from ParseCRL
}

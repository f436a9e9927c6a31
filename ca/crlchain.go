package ca

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
)

// CRLChainFile is, in an intermediate's directory, this CA's CRL followed
// by its root's (PEM): the one file a web server that checks a CRL for
// every CA of a client's chain reads (nginx ssl_crl, Apache
// SSLCARevocationFile with SSLCARevocationCheck chain, HAProxy crl-file).
// It is rewritten, atomically, whenever either CRL changes; a root has
// none.
const CRLChainFile = "crl-chain.pem"

// checkCRLChain rewrites CRLChainFile, reporting it, when it does not hold
// crl.pem and root-crl.pem (a crash between their writes, or a directory
// made before the file existed).
func (c *CA) checkCRLChain(rep *CheckReport) error {
	if !c.IsIntermediate() {
		return nil
	}
	want, err := c.crlChain()
	if err != nil || want == nil {
		return err
	}
	if got, err := c.dir.ReadFile(CRLChainFile); err == nil && bytes.Equal(got, want) {
		return nil
	}
	if err := c.dir.WriteAtomic(CRLChainFile, want, 0o644); err != nil {
		return err
	}
	rep.Repaired = append(rep.Repaired, fmt.Sprintf("rewrote %s from %s and %s: it was missing or stale", CRLChainFile, CRLPEMFile, RootCRLPEMFile))
	return nil
}

// writeCRLChain rewrites CRLChainFile from crl.pem and root-crl.pem, in an
// intermediate whose two CRLs are both there; elsewhere it does nothing.
func (c *CA) writeCRLChain() error {
	if !c.IsIntermediate() {
		return nil
	}
	out, err := c.crlChain()
	if err != nil || out == nil {
		return err
	}
	return c.dir.WriteAtomic(CRLChainFile, out, 0o644)
}

// crlChain is what CRLChainFile must hold; nil while one of the two CRLs
// is missing (the import writes the other one next).
func (c *CA) crlChain() ([]byte, error) {
	var out []byte
	for _, name := range []string{CRLPEMFile, RootCRLPEMFile} {
		data, err := c.dir.ReadFile(name)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("writing %q: %w", c.dir.Join(CRLChainFile), err)
		}
		out = append(out, data...)
	}
	return out, nil
}

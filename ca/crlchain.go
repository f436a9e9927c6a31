package ca

import (
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

// writeCRLChain rewrites CRLChainFile from crl.pem and root-crl.pem, in an
// intermediate whose two CRLs are both there; elsewhere it does nothing.
func (c *CA) writeCRLChain() error {
	if !c.IsIntermediate() {
		return nil
	}
	var out []byte
	for _, name := range []string{CRLPEMFile, RootCRLPEMFile} {
		data, err := c.dir.ReadFile(name)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // the import writes the other one next
		}
		if err != nil {
			return fmt.Errorf("writing %q: %w", c.dir.Join(CRLChainFile), err)
		}
		out = append(out, data...)
	}
	return c.dir.WriteAtomic(CRLChainFile, out, 0o644)
}

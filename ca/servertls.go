package ca

import (
	"crypto/tls"
	"time"
)

// TLSCertificate returns the leaf as a TLS server presents it: the
// certificate followed by the CA chain, with its key (nil without one).
func (l *Leaf) TLSCertificate() tls.Certificate {
	out := tls.Certificate{Certificate: [][]byte{l.Cert.Raw}, PrivateKey: l.Key, Leaf: l.Cert}
	for _, c := range l.Chain {
		out.Certificate = append(out.Certificate, c.Raw)
	}
	return out
}

// ServerTLSCertificate loads the certificate ServerCert picks for name at
// now, with its chain and key, ready for a tls.Config.
func (c *CA) ServerTLSCertificate(name string, now time.Time) (tls.Certificate, error) {
	rec, err := c.ServerCert(name, now)
	if err != nil {
		return tls.Certificate{}, err
	}
	leaf, err := c.LoadLeaf(rec)
	if err != nil {
		return tls.Certificate{}, err
	}
	return leaf.TLSCertificate(), nil
}

package serve

import (
	"net/http"
	"net/url"
	"strings"
	"sync"

	"minica/ca"
	"minica/serve/internal/etag"
)

// Paths of the root's CRL that an intermediate CA keeps (see
// docs/hierarchy.md), served beside its own.
const (
	rootCRLDERPath = "/root-crl.der"
	rootCRLPEMPath = "/root-crl.pem"
	epRootCRL      = "root-crl.der"
	epRootCRLPEM   = "root-crl.pem"
	epRootCRLURL   = "root-crl-url"
)

// rootCRL is the root CRL as last read, re-read when its file changes
// (`minica crl import-root`), which costs one lstat per request.
type rootCRL struct {
	mu  sync.Mutex
	cur *ca.PublishedCRL
}

// rootCRLPaths returns the paths the root CRL is served at: none for a CA
// that is not an intermediate; /root-crl.der, /root-crl.pem and the path
// of the root's CRL URL (in the intermediate's certificate) when that URL
// names the host of the CA's own CRL URL or OCSP URL, and the path is free.
func (s *Server) rootCRLPaths() map[string]string {
	c := s.cfg.CA
	if !c.IsIntermediate() {
		return nil
	}
	paths := map[string]string{rootCRLDERPath: epRootCRL, rootCRLPEMPath: epRootCRLPEM}
	for _, raw := range c.Cert.CRLDistributionPoints {
		u, err := url.Parse(raw)
		if err != nil || u.Path == "" || u.Path == "/" || !sameHost(u, c.Settings.CRLURL, s.cfg.OCSPURL, c.Settings.OCSPURL) {
			continue
		}
		p := u.Path
		if _, taken := s.static[p]; taken || s.crlPath[p] || s.ocsp[p] || p == "/crl.pem" || isOps(p) || paths[p] != "" {
			s.log.Event("root-crl-url-path-taken", "path", p, "url", raw)
			continue
		}
		paths[p] = epRootCRLURL
	}
	return paths
}

// sameHost reports whether u names the host of one of the URLs given.
func sameHost(u *url.URL, urls ...string) bool {
	for _, raw := range urls {
		if v, err := url.Parse(raw); err == nil && v.Host != "" && strings.EqualFold(v.Host, u.Host) {
			return true
		}
	}
	return false
}

// serveRootCRL answers a request for the root's CRL, DER or PEM, as
// serveCRL answers for the CA's own (ETag, Last-Modified, Cache-Control),
// without long polls: the root CRL changes a few times a year.
func (s *Server) serveRootCRL(w http.ResponseWriter, r *http.Request, asPEM bool) {
	pub, err := s.loadRootCRL()
	if err != nil {
		s.log.Event("root-crl-unreadable", "error", err.Error())
		plain(w, http.StatusServiceUnavailable, "the root CRL is not available: import it with 'minica crl import-root FILE'")
		return
	}
	cc := crlCacheControl(pub.CRL, s.cfg.Now())
	if asPEM {
		p := &crlBody{der: pub.DER}
		writeConditionalFunc(w, r, "application/x-pem-file", etag.Of(pub.DER), pub.CRL.ThisUpdate(), p.pemLen(), p.writePEM, cc)
		return
	}
	writeConditional(w, r, "application/pkix-crl", etag.Of(pub.DER), pub.CRL.ThisUpdate(), pub.DER, cc)
}

// loadRootCRL returns the root CRL, reading it again when its file's stamp
// has changed since the last read.
func (s *Server) loadRootCRL() (*ca.PublishedCRL, error) {
	s.root.mu.Lock()
	defer s.root.mu.Unlock()
	stamp, err := s.cfg.CA.RootCRLStamp()
	if err != nil {
		return nil, err
	}
	if s.root.cur != nil && s.root.cur.Stamp == stamp {
		return s.root.cur, nil
	}
	s.caMu.Lock()
	pub, err := s.cfg.CA.ReadRootCRL()
	s.caMu.Unlock()
	if err != nil {
		return nil, err
	}
	s.root.cur = pub
	return pub, nil
}

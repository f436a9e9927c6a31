package acme

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"net/http"
	"strings"

	"minica/ca"
)

// finalizeRequest is finalize's payload.
type finalizeRequest struct {
	CSR string `json:"csr"`
}

// finalize issues the certificate of a ready order for its CSR (RFC 8555
// section 7.4), under the CA lock: the order is read again there, so that
// of two finalizes (on any replicas) one issues and the other sees it
// valid. The certificate is recorded (its record names the account)
// before the order says valid; a crash between leaves the order ready and
// the certificate recorded.
func (s *Server) finalize(w http.ResponseWriter, r *http.Request, req *request, o *order) (any, error) {
	var in finalizeRequest
	if err := decodePayload(req.payload, &in); err != nil {
		return nil, err
	}
	der, err := base64.RawURLEncoding.DecodeString(in.CSR)
	if err != nil {
		return nil, prob(http.StatusBadRequest, ErrBadCSR, "csr is not base64url: %v", err)
	}
	csr, err := x509.ParseCertificateRequest(der)
	if err != nil {
		return nil, prob(http.StatusBadRequest, ErrBadCSR, "csr is not a PKCS #10 request: %v", err)
	}
	policy, err := s.policyOf(req.acct)
	if err != nil {
		return nil, err
	}
	var issued *ca.Issued
	err = s.locked(func(c *ca.CA) error {
		cur, err := s.obj.order(o.ID)
		if err != nil {
			return err
		}
		*o = *cur
		st, err := s.orderStatus(o)
		if err != nil {
			return err
		}
		if st != statusReady {
			if st == statusValid || st == statusProcessing {
				return nil // finalized already: answer the order
			}
			return prob(http.StatusForbidden, ErrOrderNotReady, "the order is %s, not ready: its authorizations must be valid first", st)
		}
		issued, err = c.IssueACME(s.cfg.Signer, ca.ACMEOrder{Account: req.acct.ID, Identifiers: o.Identifiers, Policy: *policy}, csr)
		if err != nil {
			if errors.Is(err, ca.ErrACMECSR) {
				return prob(http.StatusBadRequest, ErrBadCSR, "%v", err)
			}
			if errors.Is(err, ca.ErrACMEIdentifier) {
				return identifierProblem(err)
			}
			return issuerProblem(err)
		}
		o.Status, o.Serial = statusValid, issued.Record.Serial
		return s.obj.putVolatile(kindOrder, o.ID, o)
	})
	if err != nil {
		return nil, err
	}
	if issued != nil {
		s.issued.Add(1)
		s.log.Event("acme-issued", "account", req.acct.ID, "order", o.ID, "serial", issued.Record.Serial,
			"name", issued.Record.Name, "not_after", issued.Record.NotAfter.UTC().Format("2006-01-02T15:04:05Z"), "client", r.RemoteAddr)
	}
	st, err := s.orderStatus(o)
	if err != nil {
		return nil, err
	}
	return withLocation(w, s.url(r, orderPath+o.ID), s.orderView(r, o, st))
}

// ChainType is the media type of a certificate download.
const ChainType = "application/pem-certificate-chain"

// serveCert answers POST-as-GET of a certificate: the leaf, then the
// CA's chain up to (not including) the root, in PEM. Only the account
// whose order issued it may read it.
func (s *Server) serveCert(w http.ResponseWriter, r *http.Request) (any, error) {
	req, err := s.verify(w, r, wantKID)
	if err != nil {
		return nil, err
	}
	if !req.postAsGet() {
		return nil, malformed("a certificate is read with POST-as-GET (an empty payload)")
	}
	serial := strings.TrimPrefix(r.URL.Path, certPath)
	var body bytes.Buffer
	err = s.withCA(func(c *ca.CA) error {
		rec, cert, err := recordOf(c, serial)
		if err != nil {
			return err
		}
		if rec.ACMEAccount != req.acct.ID {
			return unauthorized("the certificate is not this account's")
		}
		pem.Encode(&body, &pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
		for _, ic := range c.LeafChain() {
			pem.Encode(&body, &pem.Block{Type: "CERTIFICATE", Bytes: ic.Raw})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	w.Header().Set("Content-Type", ChainType)
	w.WriteHeader(http.StatusOK)
	w.Write(body.Bytes())
	return nil, nil
}

// recordOf reads the record and certificate of a serial in hex.
func recordOf(c *ca.CA, serial string) (*ca.Record, *x509.Certificate, error) {
	n, err := ca.ParseSerial(serial)
	if err != nil {
		return nil, nil, notFound("certificate")
	}
	rec, err := c.Record(n)
	if errors.Is(err, ca.ErrNotFound) {
		return nil, nil, notFound("certificate")
	}
	if err != nil {
		return nil, nil, err
	}
	cert, err := c.Certificate(rec)
	if err != nil {
		return nil, nil, err
	}
	return rec, cert, nil
}

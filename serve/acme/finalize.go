package acme

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"net/http"
	"slices"
	"strings"

	"minica/ca"
)

// finalizeRequest is finalize's payload.
type finalizeRequest struct {
	CSR string `json:"csr"`
}

// finalize issues the certificate of a ready order for its CSR (RFC 8555
// section 7.4), in the next batch of the Server's issuer (see issuer),
// under the CA lock: the order is read again there, so that of two
// finalizes (on any replicas) one issues and the other sees it valid.
// The certificate is recorded (its record names the account) and its
// files durable before the order says valid; a crash between leaves the
// order ready and the certificate recorded.
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
	j := &finalizeJob{account: req.acct.ID, orderID: o.ID, policy: policy, csr: csr, done: make(chan struct{})}
	select {
	case s.finalizes <- j:
	case <-s.ctx.Done():
		return nil, errors.New("the ACME server is closing")
	}
	<-j.done
	if j.err != nil {
		return nil, j.err
	}
	*o = *j.order
	if j.issued != nil {
		s.issued.Add(1)
		s.log.Event("acme-issued", "account", req.acct.ID, "order", o.ID, "serial", j.issued.Record.Serial,
			"name", j.issued.Record.Name, "not_after", j.issued.Record.NotAfter.UTC().Format("2006-01-02T15:04:05Z"), "client", r.RemoteAddr)
	}
	st, err := s.orderStatus(o)
	if err != nil {
		return nil, err
	}
	return withLocation(w, s.url(r, orderPath+o.ID), s.orderView(r, o, st))
}

// finalizeJob is a finalize for the issuer: what it asks, and once done
// is closed, the order as it then is and the certificate issued (nil when
// the order was finalized already), or why not.
type finalizeJob struct {
	account string
	orderID string
	policy  *ca.ACMEPolicy
	csr     *x509.CertificateRequest
	done    chan struct{}
	order   *order
	issued  *ca.Issued
	err     error
}

// maxBatch bounds the finalizes issued together.
const maxBatch = 64

// issuer issues the finalizes sent to s.finalizes in batches, until the
// Server closes: those that arrive while a batch is issued make the
// next, issued under one CA lock with one sync (group commit). A batch
// is issued as soon as the one before is done: nothing waits for a batch
// to fill.
func (s *Server) issuer() {
	var jobs []*finalizeJob // a batch's second finalizes of its orders
	for {
		if len(jobs) == 0 {
			select {
			case j := <-s.finalizes:
				jobs = append(jobs, j)
			case <-s.ctx.Done():
				return
			}
		}
	more:
		for len(jobs) < maxBatch {
			select {
			case j := <-s.finalizes:
				jobs = append(jobs, j)
			default:
				break more
			}
		}
		jobs = s.issueBatch(jobs)
	}
}

// issueBatch finalizes jobs under the CA lock, each order read again
// there, and closes their done; it returns, undone, the finalizes of an
// order that another of the batch finalizes, for the next batch.
func (s *Server) issueBatch(jobs []*finalizeJob) []*finalizeJob {
	var todo, later []*finalizeJob
	err := s.locked(func(c *ca.CA) error {
		var fins []ca.ACMEFinalize
		for _, j := range jobs {
			if slices.ContainsFunc(todo, func(t *finalizeJob) bool { return t.orderID == j.orderID }) {
				later = append(later, j)
				continue
			}
			var ready bool
			if j.order, ready, j.err = s.readyOrder(j.orderID); !ready {
				continue
			}
			todo = append(todo, j)
			fins = append(fins, ca.ACMEFinalize{Order: ca.ACMEOrder{Account: j.account, Identifiers: j.order.Identifiers, Policy: *j.policy}, CSR: j.csr})
		}
		issued, errs := c.IssueACMEBatch(s.cfg.Signer, fins)
		for i, j := range todo {
			if errs[i] != nil {
				j.err = finalizeProblem(errs[i])
				continue
			}
			j.issued = issued[i]
			j.order.Status, j.order.Serial = statusValid, j.issued.Record.Serial
			j.err = s.obj.putVolatile(kindOrder, j.order.ID, j.order)
		}
		return nil
	})
	for _, j := range jobs {
		if slices.Contains(later, j) {
			continue
		}
		if err != nil {
			j.err = err
		}
		close(j.done)
	}
	return later
}

// readyOrder reads order id under the lock: ready tells whether it is
// ready to be finalized; an order finalized already is returned without
// an error, for the finalize to answer; another is orderNotReady.
func (s *Server) readyOrder(id string) (o *order, ready bool, err error) {
	if o, err = s.obj.order(id); err != nil {
		return nil, false, err
	}
	st, err := s.orderStatus(o)
	switch {
	case err != nil:
		return nil, false, err
	case st == statusReady:
		return o, true, nil
	case st == statusValid || st == statusProcessing:
		return o, false, nil
	}
	return nil, false, prob(http.StatusForbidden, ErrOrderNotReady, "the order is %s, not ready: its authorizations must be valid first", st)
}

// finalizeProblem maps an error of ca.IssueACMEBatch: badCSR,
// rejectedIdentifier, the CA revoked at its root, or the error itself.
func finalizeProblem(err error) error {
	if errors.Is(err, ca.ErrACMECSR) {
		return prob(http.StatusBadRequest, ErrBadCSR, "%v", err)
	}
	if errors.Is(err, ca.ErrACMEIdentifier) {
		return identifierProblem(err)
	}
	return issuerProblem(err)
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

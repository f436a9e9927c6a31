package acme

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"math/big"
	"net/http"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"minica/ca"
	"minica/revoke"
)

// revokeRequest is revokeCert's payload.
type revokeRequest struct {
	Certificate string `json:"certificate"`
	Reason      *int   `json:"reason"`
}

// acmeReasons are the reasons a client may give (RFC 8555 section 7.6
// lets the server choose): none that only the CA's operator knows
// (cACompromise, certificateHold, removeFromCRL, privilegeWithdrawn,
// aACompromise).
var acmeReasons = []revoke.Reason{revoke.Unspecified, revoke.KeyCompromise, revoke.AffiliationChanged,
	revoke.Superseded, revoke.CessationOfOperation}

// serveRevoke revokes a certificate (RFC 8555 section 7.6), signed by
// the account whose order issued it (kid) or by the certificate's own key
// (jwk), and publishes a CRL at once, which serve and its replicas pick
// up as any revocation.
func (s *Server) serveRevoke(w http.ResponseWriter, r *http.Request) (any, error) {
	req, err := s.verify(w, r, wantAny)
	if err != nil {
		return nil, err
	}
	var in revokeRequest
	if err := decodePayload(req.payload, &in); err != nil {
		return nil, err
	}
	der, err := base64.RawURLEncoding.DecodeString(in.Certificate)
	if err != nil {
		return nil, malformed("certificate is not base64url: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, malformed("certificate is not a DER certificate: %v", err)
	}
	reason := revoke.Unspecified
	if in.Reason != nil {
		reason = revoke.Reason(*in.Reason)
	}
	if !revokable(reason) {
		return nil, prob(http.StatusBadRequest, ErrBadRevocationReason, "reason %d: a client may give 0, 1, 3, 4 or 5", int(reason))
	}
	var rec *ca.Record
	err = s.locked(func(c *ca.CA) error {
		var stored *x509.Certificate
		var err error
		if rec, stored, err = recordOf(c, ca.SerialHex(cert.SerialNumber)); err != nil {
			return err
		}
		if !bytes.Equal(stored.Raw, cert.Raw) {
			return notFound("certificate")
		}
		if err := mayRevoke(req, rec, cert); err != nil {
			return err
		}
		res, err := c.RevokeRecord(rec, reason)
		if err != nil {
			return err
		}
		if res.Already && !res.Unpublished {
			return prob(http.StatusBadRequest, ErrAlreadyRevoked, "serial %s was revoked at %s", rec.Serial, rec.RevokedAt.UTC().Format(time.RFC3339))
		}
		_, err = c.PublishRevocations(s.cfg.Signer, res.ChangedRecords())
		return err
	})
	if err != nil {
		return nil, err
	}
	s.log.Event("acme-revoked", "serial", rec.Serial, "name", rec.Name, "reason", reason.String(), "client", r.RemoteAddr)
	w.WriteHeader(http.StatusOK)
	return nil, nil
}

func revokable(r revoke.Reason) bool {
	for _, ok := range acmeReasons {
		if r == ok {
			return true
		}
	}
	return false
}

// mayRevoke tells whether the request may revoke the certificate: an
// account only its own ACME certificates, a jwk only the certificate of
// that key.
func mayRevoke(req *request, rec *ca.Record, cert *x509.Certificate) error {
	if req.sig.Signatures[0].Protected.KeyID != "" {
		if rec.ACMEAccount != req.acct.ID {
			return unauthorized("the certificate was not issued to this account")
		}
		return nil
	}
	certKey := jose.JSONWebKey{Key: cert.PublicKey}
	if !sameKey(&certKey, req.jwk) {
		return unauthorized("the JWS is not signed by the certificate's key")
	}
	return nil
}

// renewalInfo is the answer of renewal information (RFC 9773).
type renewalInfo struct {
	SuggestedWindow struct {
		Start time.Time `json:"start"`
		End   time.Time `json:"end"`
	} `json:"suggestedWindow"`
}

// serveRenewalInfo answers GET of a certificate's renewal information
// (RFC 9773): the path's ID is base64url(authority key identifier), a
// dot, base64url(serial's DER content octets).
func (s *Server) serveRenewalInfo(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		return nil, prob(http.StatusMethodNotAllowed, ErrMalformed, "renewal information is GET")
	}
	aki, serial, err := parseCertID(strings.TrimPrefix(r.URL.Path, renewalPath))
	if err != nil {
		return nil, err
	}
	var info renewalInfo
	err = s.withCA(func(c *ca.CA) error {
		if !bytes.Equal(aki, c.Cert.SubjectKeyId) {
			return notFound("certificate of this CA")
		}
		rec, err := c.Record(serial)
		if err != nil {
			return notFound("certificate")
		}
		info.SuggestedWindow.Start, info.SuggestedWindow.End, err = c.ACMERenewalWindow(rec, s.cfg.Now())
		return err
	})
	if err != nil {
		return nil, err
	}
	w.Header().Set("Retry-After", strconvSeconds(s.cfg.RenewalRetry))
	return info, nil
}

// parseCertID splits an RFC 9773 certificate ID.
func parseCertID(id string) (aki []byte, serial *big.Int, err error) {
	a, sn, ok := strings.Cut(id, ".")
	bad := malformed("%q is not a certificate ID (base64url key identifier, '.', base64url serial)", id)
	if !ok {
		return nil, nil, bad
	}
	if aki, err = base64.RawURLEncoding.DecodeString(a); err != nil || len(aki) == 0 {
		return nil, nil, bad
	}
	raw, err := base64.RawURLEncoding.DecodeString(sn)
	if err != nil || len(raw) == 0 || raw[0]&0x80 != 0 {
		return nil, nil, bad
	}
	return aki, new(big.Int).SetBytes(raw), nil
}

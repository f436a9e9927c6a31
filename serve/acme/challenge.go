package acme

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"minica/serve/acme/validate"
)

// serveChallenge answers a POST to a challenge: POST-as-GET reads it, an
// empty object ({}) asks the server to validate it (RFC 8555 section
// 7.5.1). Validation runs in the background, bounded by
// Config.Validations at once; the client polls the authorization.
func (s *Server) serveChallenge(w http.ResponseWriter, r *http.Request) (any, error) {
	req, err := s.verify(w, r, wantKID)
	if err != nil {
		return nil, err
	}
	azID, typ, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, challPath), "/")
	az, err := s.ownAuthz(req.acct, azID)
	if err != nil {
		return nil, err
	}
	i := az.challenge(typ)
	if i < 0 {
		return nil, notFound("challenge")
	}
	w.Header().Set("Link", "<"+s.url(r, authzPath+az.ID)+`>;rel="up"`)
	if req.postAsGet() {
		retryWhileValidating(w, az)
		return s.challengeView(r, az, az.Challenges[i]), nil
	}
	var in struct{}
	if err := decodePayload(req.payload, &in); err != nil {
		return nil, err
	}
	if st := s.authzStatus(az); st != statusPending {
		return s.challengeView(r, az, az.Challenges[i]), nil // nothing left to do
	}
	ch := &az.Challenges[i]
	if ch.Status == statusPending {
		ch.Status = statusProcessing
		if err := s.obj.put(kindAuthz, az.ID, az); err != nil {
			return nil, err
		}
	}
	if ch.Status == statusProcessing {
		// A second POST (from this replica or another, or after a crash
		// left it processing) validates again: the result is the same.
		s.startValidation(az.ID, typ, keyAuthorization(ch.Token, req.acct.Thumbprint))
	}
	retryWhileValidating(w, az)
	return s.challengeView(r, az, *ch), nil
}

// retryWhileValidating tells a client, with Retry-After, when to poll
// again while a challenge of az is being validated (RFC 8555 section
// 8.2): a client without it guesses, lego 5 s per authorization.
func retryWhileValidating(w http.ResponseWriter, az *authz) {
	for _, ch := range az.Challenges {
		if ch.Status == statusProcessing {
			w.Header().Set("Retry-After", strconvSeconds(DefaultValidationRetry))
			return
		}
	}
}

// challenge returns the index of the challenge of type typ, or -1.
func (az *authz) challenge(typ string) int {
	for i, ch := range az.Challenges {
		if ch.Type == typ {
			return i
		}
	}
	return -1
}

// startValidation validates a challenge in the background, waiting for a
// slot; a Server closed meanwhile validates nothing.
func (s *Server) startValidation(azID, typ, keyAuth string) {
	s.wg.Go(func() {
		select {
		case s.slots <- struct{}{}:
		case <-s.ctx.Done():
			return
		}
		defer func() { <-s.slots }()
		s.validate(azID, typ, keyAuth)
	})
}

// validate checks one challenge and writes its outcome into the
// authorization: valid makes it valid, a failure invalid (RFC 8555
// section 7.1.6).
func (s *Server) validate(azID, typ, keyAuth string) {
	az, err := s.obj.authz(azID)
	if err != nil {
		s.log.Event("acme-validation-error", "authz", azID, "detail", err.Error())
		return
	}
	i := az.challenge(typ)
	if i < 0 || az.Challenges[i].Status != statusProcessing {
		return
	}
	id := validate.Identifier{Type: az.Identifier.Type, Value: az.Identifier.Value}
	ch := &az.Challenges[i]
	err = s.check(id, ch, keyAuth)
	// Read again: another replica may have settled it meanwhile.
	if cur, rerr := s.obj.authz(azID); rerr == nil && cur.Status != statusPending {
		return
	}
	if err != nil {
		ch.Status, az.Status = statusInvalid, statusInvalid
		ch.Error = validationProblem(err, az.Identifier)
	} else {
		ch.Status, az.Status, ch.Validated = statusValid, statusValid, s.cfg.Now().UTC()
	}
	if perr := s.obj.put(kindAuthz, az.ID, az); perr != nil {
		s.log.Event("acme-validation-error", "authz", azID, "detail", perr.Error())
		return
	}
	kv := []string{"authz", az.ID, "account", az.Account, "identifier", az.Identifier.Value, "challenge", typ, "status", ch.Status}
	if ch.Error != nil {
		kv = append(kv, "type", ch.Error.short(), "detail", ch.Error.Detail)
	}
	s.log.Event("acme-validation", kv...)
}

// check runs the validator for a challenge.
func (s *Server) check(id validate.Identifier, ch *challenge, keyAuth string) error {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	switch ch.Type {
	case challHTTP01:
		return s.cfg.Validator.HTTP01(ctx, id, ch.Token, keyAuth)
	case challTLSALPN01:
		return s.cfg.Validator.TLSALPN01(ctx, id, keyAuth)
	case challDNS01:
		return s.cfg.Validator.DNS01(ctx, id, keyAuth)
	}
	return fmt.Errorf("unknown challenge type %q", ch.Type)
}

// validationProblem is the problem of a failed validation, its type the
// validator's.
func validationProblem(err error, id Identifier) *problem {
	p := prob(http.StatusForbidden, "incorrectResponse", "%v", err)
	var ve *validate.Error
	if errors.As(err, &ve) {
		p = prob(http.StatusForbidden, ve.Type, "%s", ve.Detail)
	}
	p.Identifier = &id
	return p
}

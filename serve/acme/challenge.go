package acme

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"minica/serve/acme/validate"
)

// serveChallenge answers a POST to a challenge: POST-as-GET reads it, an
// empty object ({}) asks the server to validate it (RFC 8555 section
// 7.5.1). The validation runs within the request, at most
// Config.Validations at once, so that the answer (and the client's next
// look at the authorization) is most often settled; a validation cut
// short (the client hung up, a crash) is run again in the background by
// the next look at a challenge or authorization processing for longer
// than staleValidation.
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
	if !req.postAsGet() {
		var in struct{}
		if err := decodePayload(req.payload, &in); err != nil {
			return nil, err
		}
		if az, err = s.respond(r.Context(), req.acct, az, i); err != nil {
			return nil, err
		}
	}
	s.revive(az, req.acct)
	retryWhileValidating(w, az)
	return s.challengeView(r, az, az.Challenges[i]), nil
}

// staleValidation is how long a challenge may stay processing before a
// look at it starts its validation again.
const staleValidation = 30 * time.Second

// respond starts the validation of challenge i of a pending az, runs it
// and returns az as it then is.
func (s *Server) respond(ctx context.Context, a *account, az *authz, i int) (*authz, error) {
	ch := &az.Challenges[i]
	if s.authzStatus(az) != statusPending || ch.Status != statusPending {
		return az, nil // settled, or being validated: nothing to start
	}
	ch.Status, ch.Started = statusProcessing, s.cfg.Now().UTC()
	if err := s.obj.putAuthz(az); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.ctx, cancel)()
	if done := s.validate(ctx, az.ID, ch.Type, keyAuthorization(ch.Token, a.Thumbprint)); done != nil {
		return done, nil
	}
	return s.obj.authz(az.ID)
}

// revive validates again, in the background, a challenge of az left
// processing for longer than staleValidation, first marking it started
// now so that the next look does not start it once more.
func (s *Server) revive(az *authz, a *account) {
	now := s.cfg.Now().UTC()
	for i := range az.Challenges {
		ch := &az.Challenges[i]
		if ch.Status != statusProcessing || now.Sub(ch.Started) <= staleValidation {
			continue
		}
		ch.Started = now
		if err := s.obj.putAuthz(az); err != nil {
			s.log.Event("acme-validation-error", "authz", az.ID, "detail", err.Error())
			return
		}
		s.startValidation(az.ID, ch.Type, keyAuthorization(ch.Token, a.Thumbprint))
	}
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

// startValidation validates a challenge in the background (see
// validate); a Server closed meanwhile validates nothing.
func (s *Server) startValidation(azID, typ, keyAuth string) {
	s.wg.Go(func() { s.validate(s.ctx, azID, typ, keyAuth) })
}

// validate checks one challenge, waiting for one of Config.Validations
// slots, and writes its outcome into the authorization: valid makes it
// valid, a failure invalid (RFC 8555 section 7.1.6). It returns the
// authorization it wrote, or nil. A ctx done first leaves the challenge
// processing.
func (s *Server) validate(ctx context.Context, azID, typ, keyAuth string) *authz {
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return nil
	}
	defer func() { <-s.slots }()
	az, err := s.obj.authz(azID)
	if err != nil {
		s.log.Event("acme-validation-error", "authz", azID, "detail", err.Error())
		return nil
	}
	i := az.challenge(typ)
	if i < 0 || az.Challenges[i].Status != statusProcessing {
		return nil
	}
	id := validate.Identifier{Type: az.Identifier.Type, Value: az.Identifier.Value}
	failed := s.check(ctx, id, &az.Challenges[i], keyAuth)
	if ctx.Err() != nil {
		return nil // stopped, not failed: left processing
	}
	var ch *challenge
	az, err = s.obj.updateAuthz(azID, func(cur *authz) bool {
		// Read again: another replica may have settled it meanwhile.
		if cur.Status != statusPending || cur.challenge(typ) < 0 {
			return false
		}
		ch = &cur.Challenges[cur.challenge(typ)]
		if failed != nil {
			ch.Status, cur.Status = statusInvalid, statusInvalid
			ch.Error = validationProblem(failed, cur.Identifier)
		} else {
			ch.Status, cur.Status, ch.Validated = statusValid, statusValid, s.cfg.Now().UTC()
		}
		return true
	})
	if err != nil {
		s.log.Event("acme-validation-error", "authz", azID, "detail", err.Error())
		return nil
	}
	if ch == nil {
		return nil
	}
	kv := []string{"authz", az.ID, "account", az.Account, "identifier", az.Identifier.Value, "challenge", typ, "status", ch.Status}
	if ch.Error != nil {
		kv = append(kv, "type", ch.Error.short(), "detail", ch.Error.Detail)
	}
	s.log.Event("acme-validation", kv...)
	return az
}

// check runs the validator for a challenge.
func (s *Server) check(ctx context.Context, id validate.Identifier, ch *challenge, keyAuth string) error {
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

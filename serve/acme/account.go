package acme

import (
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"net/mail"
	"strings"

	jose "github.com/go-jose/go-jose/v4"

	"minica/ca"
)

// accountJSON is an account as the client reads it.
type accountJSON struct {
	Status                 string          `json:"status"`
	Contact                []string        `json:"contact,omitempty"`
	Orders                 string          `json:"orders,omitempty"`
	ExternalAccountBinding json.RawMessage `json:"externalAccountBinding,omitempty"`
}

func accountView(a *account) accountJSON {
	return accountJSON{Status: a.Status, Contact: a.Contact}
}

// newAccountRequest is newAccount's payload.
type newAccountRequest struct {
	Contact                []string        `json:"contact"`
	TermsOfServiceAgreed   bool            `json:"termsOfServiceAgreed"`
	OnlyReturnExisting     bool            `json:"onlyReturnExisting"`
	ExternalAccountBinding json.RawMessage `json:"externalAccountBinding"`
}

// serveNewAccount creates an account, or finds the one of the key
// (RFC 8555 section 7.3).
func (s *Server) serveNewAccount(w http.ResponseWriter, r *http.Request) (any, error) {
	req, err := s.verify(w, r, wantJWK)
	if err != nil {
		return nil, err
	}
	var in newAccountRequest
	if err := decodePayload(req.payload, &in); err != nil {
		return nil, err
	}
	if req.acct != nil {
		return withLocation(w, s.url(r, accountPath+req.acct.ID), accountView(req.acct))
	}
	if in.OnlyReturnExisting {
		return nil, prob(http.StatusBadRequest, ErrAccountDoesNotExist, "no account has this key")
	}
	if err := checkContacts(in.Contact); err != nil {
		return nil, err
	}
	keyID, err := s.bindingOf(req, in.ExternalAccountBinding)
	if err != nil {
		return nil, err
	}
	thumb, err := thumbprint(req.jwk)
	if err != nil {
		return nil, err
	}
	key, err := req.jwk.MarshalJSON()
	if err != nil {
		return nil, err
	}
	a := &account{ID: newID(16), Key: key, Thumbprint: thumb, Status: statusValid, Contact: in.Contact,
		Binding: keyID, Created: s.cfg.Now().UTC()}
	existing, err := s.createAccount(a)
	if err != nil {
		return nil, err
	}
	if existing != nil { // the same key raced in from another request
		return withLocation(w, s.url(r, accountPath+existing.ID), accountView(existing))
	}
	s.log.Event("acme-account", "account", a.ID, "binding", keyID, "client", r.RemoteAddr)
	return created(w, s.url(r, accountPath+a.ID), accountView(a))
}

// createAccount writes a new account under the CA lock: its key's index
// first (the one arbiter of a key, whichever replica races), then the
// binding's count, then the account. It returns the account the key
// already had, if any.
func (s *Server) createAccount(a *account) (*account, error) {
	var existing *account
	err := s.locked(func(c *ca.CA) error {
		if id, err := s.obj.accountOfKey(a.Thumbprint); err != nil || id != "" {
			if err == nil {
				existing, err = s.obj.account(id)
			}
			return err
		}
		if a.Binding != "" {
			if _, err := c.BindACMEAccount(a.Binding, a.ID); err != nil {
				return bindingProblem(err)
			}
		}
		if err := s.obj.create(kindAccount, a.ID, a); err != nil {
			return err
		}
		return s.obj.db.CreateObject(objectOf(kindKey, keyIndexID(a.Thumbprint), a.ID))
	})
	return existing, err
}

// bindingOf checks newAccount's external account binding (RFC 8555
// section 7.3.4): a JWS MACed with the binding's key, naming it in kid,
// with the outer request's URL and the account key as payload, and no
// nonce. It returns the binding's key ID ("" without one, where the
// server takes accounts without: NoEAB).
func (s *Server) bindingOf(req *request, eab json.RawMessage) (string, error) {
	if len(eab) == 0 || string(eab) == "null" {
		if s.cfg.NoEAB {
			return "", nil
		}
		return "", prob(http.StatusBadRequest, ErrExternalAccountRequired,
			"this server needs an external account binding: ask the CA's operator for a key ID and HMAC key ('minica acme account add')")
	}
	jws, err := parseFlattened(eab, macAlgs)
	if err != nil {
		var p *problem
		if errors.As(err, &p) {
			p.Detail = "the external account binding: " + p.Detail
		}
		return "", err
	}
	h := jws.Signatures[0].Protected
	if h.Nonce != "" {
		return "", malformed("the external account binding must have no nonce")
	}
	if got := headerURL(h); got != req.url {
		return "", unauthorized("the external account binding's url is %q, not %q", got, req.url)
	}
	var b *ca.ACMEBinding
	err = s.withCA(func(c *ca.CA) (err error) { b, err = c.ACMEBinding(h.KeyID); return err })
	if err != nil {
		return "", bindingProblem(err)
	}
	payload, err := jws.Verify(b.HMACKey)
	if err != nil {
		return "", unauthorized("the external account binding's MAC does not verify with the key of %q", h.KeyID)
	}
	var inner jose.JSONWebKey
	if err := inner.UnmarshalJSON(payload); err != nil || !sameKey(&inner, req.jwk) {
		return "", unauthorized("the external account binding does not bind the account key of this request")
	}
	if b.Disabled {
		return "", bindingProblem(ca.ErrACMEBindingDisabled)
	}
	return b.KeyID, nil
}

// bindingProblem maps the errors of ca's bindings.
func bindingProblem(err error) error {
	switch {
	case errors.Is(err, ca.ErrACMEBindingUnknown):
		return unauthorized("%v: the key ID is not one of this CA's ('minica acme account list')", err)
	case errors.Is(err, ca.ErrACMEBindingDisabled), errors.Is(err, ca.ErrACMEBindingUsed):
		return unauthorized("%v", err)
	}
	return err
}

// checkContacts takes mailto: contacts with one address each.
func checkContacts(contacts []string) error {
	if len(contacts) > 10 {
		return prob(http.StatusBadRequest, ErrInvalidContact, "at most 10 contacts")
	}
	for _, c := range contacts {
		addr, ok := strings.CutPrefix(c, "mailto:")
		if !ok {
			return prob(http.StatusBadRequest, ErrUnsupportedContact, "contact %q: only mailto: contacts are taken", c)
		}
		if a, err := mail.ParseAddress(addr); err != nil || a.Address != addr || a.Name != "" {
			return prob(http.StatusBadRequest, ErrInvalidContact, "contact %q is not one email address", c)
		}
	}
	return nil
}

// accountUpdate is the payload of a POST to an account.
type accountUpdate struct {
	Status  string   `json:"status"`
	Contact []string `json:"contact"`
}

// serveAccount answers a POST to an account: POST-as-GET, a contact
// update or deactivation (RFC 8555 sections 7.3.2, 7.3.6).
func (s *Server) serveAccount(w http.ResponseWriter, r *http.Request) (any, error) {
	req, err := s.verify(w, r, wantKID)
	if err != nil {
		return nil, err
	}
	if req.acct.ID != strings.TrimPrefix(r.URL.Path, accountPath) {
		return nil, unauthorized("the request is signed by another account")
	}
	if req.postAsGet() {
		return accountView(req.acct), nil
	}
	var in accountUpdate
	if err := decodePayload(req.payload, &in); err != nil {
		return nil, err
	}
	if in.Status != "" && in.Status != statusDeactivated {
		return nil, malformed("an account's status can only be changed to %q", statusDeactivated)
	}
	if in.Contact != nil {
		if err := checkContacts(in.Contact); err != nil {
			return nil, err
		}
	}
	// Read again under the lock: newOrder updates the account too.
	var a *account
	err = s.locked(func(*ca.CA) (err error) {
		if a, err = s.obj.account(req.acct.ID); err != nil {
			return err
		}
		if in.Status != "" {
			a.Status = in.Status
		}
		if in.Contact != nil {
			a.Contact = in.Contact
		}
		return s.obj.put(kindAccount, a.ID, a)
	})
	if err != nil {
		return nil, err
	}
	if a.Status == statusDeactivated {
		s.log.Event("acme-account-deactivated", "account", a.ID, "client", r.RemoteAddr)
	}
	return accountView(a), nil
}

// keyChangeRequest is the payload of keyChange's inner JWS.
type keyChangeRequest struct {
	Account string          `json:"account"`
	OldKey  json.RawMessage `json:"oldKey"`
}

// serveKeyChange rolls an account over to a new key (RFC 8555 section
// 7.3.5): the outer JWS is signed by the account, the inner one by the
// new key, over the account's URL and its old key.
func (s *Server) serveKeyChange(w http.ResponseWriter, r *http.Request) (any, error) {
	req, err := s.verify(w, r, wantKID)
	if err != nil {
		return nil, err
	}
	inner, err := parseFlattened(req.payload, signatureAlgs)
	if err != nil {
		return nil, err
	}
	h := inner.Signatures[0].Protected
	if h.JSONWebKey == nil || h.KeyID != "" {
		return nil, malformed("the inner JWS of a key change must carry the new key as jwk")
	}
	if headerURL(h) != req.url {
		return nil, malformed("the inner JWS's url must be the outer one's")
	}
	if h.Nonce != "" {
		return nil, malformed("the inner JWS must have no nonce")
	}
	if err := checkJWK(h.JSONWebKey); err != nil {
		return nil, err
	}
	payload, err := inner.Verify(h.JSONWebKey)
	if err != nil {
		return nil, malformed("the inner JWS signature does not verify: %v", err)
	}
	var in keyChangeRequest
	if err := decodePayload(payload, &in); err != nil {
		return nil, err
	}
	if in.Account != s.url(r, accountPath+req.acct.ID) {
		return nil, unauthorized("the key change names account %q, not the signer's", in.Account)
	}
	var old jose.JSONWebKey
	if err := old.UnmarshalJSON(in.OldKey); err != nil || !sameKey(&old, req.jwk) {
		return nil, unauthorized("the key change's oldKey is not the account's key")
	}
	return s.rollKey(w, r, req.acct, h.JSONWebKey)
}

// rollKey gives the account a its new key, under the CA lock.
func (s *Server) rollKey(w http.ResponseWriter, r *http.Request, a *account, k *jose.JSONWebKey) (any, error) {
	thumb, err := thumbprint(k)
	if err != nil {
		return nil, err
	}
	key, err := k.MarshalJSON()
	if err != nil {
		return nil, err
	}
	oldThumb := a.Thumbprint
	err = s.locked(func(*ca.CA) error {
		err := s.obj.db.CreateObject(objectOf(kindKey, keyIndexID(thumb), a.ID))
		if errors.Is(err, fs.ErrExist) {
			w.Header().Set("Location", s.url(r, accountPath+a.ID))
			return prob(http.StatusConflict, ErrMalformed, "the new key is already an account's key")
		}
		if err != nil {
			return err
		}
		cur, err := s.obj.account(a.ID) // as newOrder last left it
		if err != nil {
			return err
		}
		cur.Key, cur.Thumbprint = key, thumb
		if err := s.obj.put(kindAccount, cur.ID, cur); err != nil {
			return err
		}
		*a = *cur
		return s.obj.db.DeleteObject(kindKey, keyIndexID(oldThumb))
	})
	if err != nil {
		return nil, err
	}
	s.log.Event("acme-key-change", "account", a.ID, "client", r.RemoteAddr)
	return accountView(a), nil
}

package signin

import (
	"errors"
	"net/http"
	"strconv"

	"golang.org/x/oauth2"

	"minica/ca"
)

// serveLogin starts a sign-in: it stores the state, nonce and PKCE
// verifier with the hash of a new binding cookie, sets the cookie and
// sends the browser to the provider.
func (h *Handler) serveLogin(w http.ResponseWriter, r *http.Request, from string) {
	oauth, _, err := h.op.get(r.Context())
	if err != nil {
		h.providerDown(w, from, err)
		return
	}
	var secrets [3]string // state, nonce, binding cookie
	for i := range secrets {
		if secrets[i], err = ca.NewSigninSecret(); err != nil {
			h.fail(w, from, err)
			return
		}
	}
	state, nonce, binding := secrets[0], secrets[1], secrets[2]
	verifier := oauth2.GenerateVerifier()
	l := &ca.SigninLogin{Nonce: nonce, Verifier: verifier, Binding: hashHex("binding", binding), Expires: h.cfg.Now().Add(h.cfg.LoginLifetime)}
	if err := h.cfg.CA.PutSigninLogin(state, l); err != nil {
		h.fail(w, from, err)
		return
	}
	h.setCookie(w, bindingCookie, binding, h.cfg.LoginLifetime)
	h.log.Event("signin-start", "from", from)
	http.Redirect(w, r, oauth.AuthCodeURL(state, oauth2.SetAuthURLParam("nonce", nonce), oauth2.S256ChallengeOption(verifier)), http.StatusFound)
}

// serveCallback finishes a sign-in: the state is spent, the browser must
// be the one that started it, the code is redeemed with the verifier, the
// ID token checked, the person mapped; then a session starts.
func (h *Handler) serveCallback(w http.ResponseWriter, r *http.Request, from string) {
	q := r.URL.Query()
	l, err := h.cfg.CA.TakeSigninLogin(q.Get("state"))
	h.setCookie(w, bindingCookie, "", 0)
	switch {
	case errors.Is(err, ca.ErrSigninUnknown):
		h.refuse(w, from, http.StatusBadRequest, "state", "This sign-in is unknown, has expired or was already used.", "")
		return
	case err != nil:
		h.fail(w, from, err)
		return
	}
	if binding := h.cookie(r, bindingCookie); binding == "" || !equal(hashHex("binding", binding), l.Binding) {
		h.refuse(w, from, http.StatusBadRequest, "binding", "This sign-in was started in another browser, or your browser did not keep its cookie.", "")
		return
	}
	if e := q.Get("error"); e != "" {
		h.refuse(w, from, http.StatusForbidden, "provider-error", "The identity provider did not sign you in (it answered "+strconv.QuoteToASCII(truncate(e, 64))+").", "")
		return
	}
	oauth, verifier, err := h.op.get(r.Context())
	if err != nil {
		h.providerDown(w, from, err)
		return
	}
	ctx, cancel := h.op.context(r.Context())
	defer cancel()
	tok, err := oauth.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(l.Verifier))
	var refused *oauth2.RetrieveError
	switch {
	case errors.As(err, &refused):
		h.refuse(w, from, http.StatusBadRequest, "code", "The identity provider did not accept this sign-in's code (used already, or expired).", refused.ErrorCode)
		return
	case err != nil:
		h.providerDown(w, from, err)
		return
	}
	raw, _ := tok.Extra("id_token").(string)
	idt, err := verifier.Verify(ctx, raw)
	if err != nil {
		h.refuse(w, from, http.StatusForbidden, "id-token", "The identity provider's answer did not pass its checks (its signature, issuer, audience or expiry).", err.Error())
		return
	}
	if !equal(idt.Nonce, l.Nonce) {
		h.refuse(w, from, http.StatusForbidden, "nonce", "The identity provider's answer was not made for this sign-in.", "")
		return
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		h.refuse(w, from, http.StatusForbidden, "claims", "The identity provider's answer could not be read.", err.Error())
		return
	}
	p, no := h.cfg.Mapping.Map(claims)
	if no != nil {
		h.log.Event("signin-refused", "from", from, "reason", no.Code, "subject", idt.Subject)
		h.m.refused.Add(1)
		h.render(w, http.StatusForbidden, &pageData{Kind: "refused", Title: "You cannot get a certificate here", Message: no.Reason, Contact: h.cfg.Contact})
		return
	}
	now := h.cfg.Now()
	token, err := h.cfg.CA.CreateSigninSession(&ca.SigninSession{Email: p.Email, CommonName: p.CommonName, OrganizationalUnit: p.OrganizationalUnit,
		Created: now, Expires: now.Add(h.cfg.SessionLifetime)})
	if err != nil {
		h.fail(w, from, err)
		return
	}
	h.setCookie(w, sessionCookie, token, h.cfg.SessionLifetime)
	h.m.signedIn.Add(1)
	h.log.Event("signin", "email", p.Email, "subject", idt.Subject, "from", from)
	http.Redirect(w, r, PathDevices, http.StatusSeeOther)
}

// refuse answers a sign-in that failed its checks: status, the page with
// msg, and a log line with code and detail (never a secret).
func (h *Handler) refuse(w http.ResponseWriter, from string, status int, code, msg, detail string) {
	h.m.refused.Add(1)
	h.log.Event("signin-refused", "from", from, "reason", code, "detail", detail)
	h.render(w, status, &pageData{Kind: "error", Title: "Sign-in refused", Message: msg + " Nothing was issued. Start again from the start page.", Retry: true})
}

// providerDown answers when the provider cannot be reached in time.
func (h *Handler) providerDown(w http.ResponseWriter, from string, err error) {
	h.m.failed.Add(1)
	h.log.Event("signin-provider-down", "from", from, "error", err.Error())
	w.Header().Set("Retry-After", strconv.Itoa(int(retryEvery.Seconds())))
	h.render(w, http.StatusServiceUnavailable, &pageData{Kind: "error", Title: "The identity provider cannot be reached",
		Message: "The identity provider did not answer in time, so nobody can sign in right now. Try again in a few minutes; if it goes on, tell your administrator.",
		Contact: h.cfg.Contact, Retry: true})
}

// fail answers an error on the server's side.
func (h *Handler) fail(w http.ResponseWriter, from string, err error) {
	h.m.failed.Add(1)
	h.log.Event("signin-failed", "from", from, "error", err.Error())
	h.render(w, http.StatusInternalServerError, &pageData{Kind: "error", Title: "Something went wrong", Message: "The server could not finish this. Try again in a minute.", Retry: true})
}

// truncate cuts s to n bytes.
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

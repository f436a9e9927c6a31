package signin

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"minica/ca"
	"minica/internal/pagesec"
	"minica/revoke"
)

// formFields are the fields each form posts; anything else is refused.
var formFields = map[string]map[string]bool{
	PathAdd:    {"csrf": true, "device": true},
	PathRenew:  {"csrf": true, "serial": true},
	PathRevoke: {"csrf": true, "serial": true, "reason": true},
	PathLogout: {"csrf": true},
}

// serveForm checks a POST of the forms of My certificates (size, origin,
// fields, session, CSRF token) and does what it asks.
func (h *Handler) serveForm(w http.ResponseWriter, r *http.Request, from string) {
	r.Body = http.MaxBytesReader(w, r.Body, MaxFormBytes)
	if err := r.ParseForm(); err != nil {
		h.formRefused(w, from, http.StatusBadRequest, "malformed", "The form could not be read.")
		return
	}
	if why := pagesec.CrossOrigin(r); why != "" {
		h.formRefused(w, from, http.StatusForbidden, why, "The form was sent from another site.")
		return
	}
	for k, v := range r.PostForm {
		if !formFields[r.URL.Path][k] || len(v) != 1 {
			h.formRefused(w, from, http.StatusBadRequest, "unexpected-field", "The form held fields this page never sends.")
			return
		}
	}
	s, token := h.session(w, r)
	if s == nil {
		return
	}
	if !equal(r.PostForm.Get("csrf"), csrfToken(token)) {
		h.formRefused(w, from, http.StatusForbidden, "csrf", "The form did not come from your page of certificates.")
		return
	}
	switch r.URL.Path {
	case PathLogout:
		if err := h.cfg.CA.EndSigninSession(token); err != nil {
			h.fail(w, from, err)
			return
		}
		h.setCookie(w, sessionCookie, "", 0)
		h.log.Event("signout", "email", s.Email, "from", from)
		http.Redirect(w, r, PathStart, http.StatusSeeOther)
	case PathAdd:
		label, err := ca.NormalizeDeviceLabel(r.PostForm.Get("device"))
		if err != nil {
			h.renderDevices(w, http.StatusBadRequest, s, token, "Name the device in 1 to 64 characters, without control characters: for example “Simon's laptop”.", "")
			return
		}
		h.link(w, r, s, token, from, func(c *ca.CA) (*ca.NewEnrollment, error) {
			return c.CreateDeviceEnrollment(ca.DeviceRequest{Email: s.Email, CommonName: s.CommonName, OrganizationalUnit: s.OrganizationalUnit,
				Label: label, Validity: h.cfg.CertValidity, MaxDevices: h.cfg.MaxDevices, Lifetime: h.cfg.LinkLifetime})
		})
	case PathRenew:
		serial := r.PostForm.Get("serial")
		h.link(w, r, s, token, from, func(c *ca.CA) (*ca.NewEnrollment, error) {
			return c.RenewDeviceEnrollment(s.Email, serial, h.cfg.LinkLifetime)
		})
	case PathRevoke:
		h.revoke(w, r, s, token, from)
	}
}

// formRefused answers a form that failed its checks.
func (h *Handler) formRefused(w http.ResponseWriter, from string, status int, why, msg string) {
	h.m.refused.Add(1)
	h.log.Event("signin-form-refused", "from", from, "reason", why)
	h.render(w, status, &pageData{Kind: "error", Title: "Form refused", Message: msg + " Nothing was changed. Open My certificates again and use its forms.", Back: true})
}

// locked runs f with the CA lock held.
func (h *Handler) locked(f func(c *ca.CA) error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	unlock, err := h.cfg.CA.Lock(h.cfg.LockTimeout)
	if err != nil {
		return err
	}
	defer unlock()
	return f(h.cfg.CA)
}

// link makes an enrollment link with create (for a new device, or to
// renew one) and sends the browser to it.
func (h *Handler) link(w http.ResponseWriter, r *http.Request, s *ca.SigninSession, token, from string, create func(*ca.CA) (*ca.NewEnrollment, error)) {
	var nl *ca.NewEnrollment
	err := h.locked(func(c *ca.CA) (err error) {
		nl, err = create(c)
		return err
	})
	var tooMany *ca.TooManyDevicesError
	switch {
	case errors.As(err, &tooMany):
		h.renderDevices(w, http.StatusConflict, s, token, fmt.Sprintf("You already hold %d valid device %s, the most allowed. Revoke one you no longer use, then add the new one.", tooMany.Max, plural(tooMany.Max, "certificate", "certificates")), "")
		return
	case errors.Is(err, ca.ErrNameTaken):
		h.renderDevices(w, http.StatusConflict, s, token, "You already have a valid certificate for a device of that name: renew it below, or choose another name.", "")
		return
	case errors.Is(err, ca.ErrNotDevice), errors.Is(err, ca.ErrDeviceNotValid):
		h.renderDevices(w, http.StatusBadRequest, s, token, "That certificate cannot be renewed: it is not one of yours, or no longer valid.", "")
		return
	case errors.Is(err, ca.ErrLocked):
		w.Header().Set("Retry-After", "5")
		h.renderDevices(w, http.StatusServiceUnavailable, s, token, "The server is busy. Wait a few seconds and try again.", "")
		return
	case err != nil:
		h.fail(w, from, err)
		return
	}
	h.m.devices.Add(1)
	h.log.Event("signin-device-link", "email", s.Email, "name", nl.Enrollment.Name, "id", nl.Enrollment.ID, "renews", nl.Enrollment.Identity.Renews, "from", from)
	http.Redirect(w, r, ca.EnrollLink("", nl.Token), http.StatusSeeOther)
}

// revoke revokes one of the person's devices for the reason they chose.
func (h *Handler) revoke(w http.ResponseWriter, r *http.Request, s *ca.SigninSession, token, from string) {
	reason, ok := deviceReason(r.PostForm.Get("reason"))
	if !ok {
		h.renderDevices(w, http.StatusBadRequest, s, token, "Choose why the certificate is revoked: lost or stolen, replaced, or no longer used.", "")
		return
	}
	serial := r.PostForm.Get("serial")
	var res *ca.RevokeResult
	err := h.locked(func(c *ca.CA) (err error) {
		res, err = c.RevokeDevice(h.cfg.Signer, s.Email, serial, reason)
		return err
	})
	switch {
	case errors.Is(err, ca.ErrNotDevice), errors.Is(err, ca.ErrDeviceNotValid):
		h.renderDevices(w, http.StatusBadRequest, s, token, "That certificate cannot be revoked: it is not one of yours, or no longer valid.", "")
		return
	case errors.Is(err, ca.ErrLocked):
		w.Header().Set("Retry-After", "5")
		h.renderDevices(w, http.StatusServiceUnavailable, s, token, "The server is busy. Nothing was revoked: wait a few seconds and try again.", "")
		return
	case err != nil && res == nil:
		h.fail(w, from, err)
		return
	case err != nil: // revoked, but the CRL could not be published now
		h.log.Event("signin-revoke-publish-failed", "serial", res.Record.Serial, "error", err.Error())
	}
	h.m.revoked.Add(1)
	h.log.Event("signin-revoked", "email", s.Email, "name", res.Record.Name, "serial", res.Record.Serial, "reason", reason.String(), "from", from)
	h.renderDevices(w, http.StatusOK, s, token, "", "The certificate of “"+res.Record.Device+"” is revoked: it no longer opens anything.")
}

// deviceReason reads the reason of the revoke form: one of ca.DeviceReasons.
func deviceReason(s string) (revoke.Reason, bool) {
	for _, r := range ca.DeviceReasons {
		if r.String() == s {
			return r, true
		}
	}
	return 0, false
}

// renderDevices answers My certificates, with an error or a notice.
func (h *Handler) renderDevices(w http.ResponseWriter, status int, s *ca.SigninSession, token, errMsg, notice string) {
	recs, err := h.cfg.CA.Devices(s.Email)
	if err != nil {
		h.fail(w, "", err)
		return
	}
	now := h.cfg.Now()
	p := &pageData{Kind: "devices", Title: "My certificates", Email: s.Email, CN: s.CommonName, CSRF: csrfToken(token),
		Error: errMsg, Notice: notice, MaxDevices: h.cfg.MaxDevices, SessionEnds: s.Expires.UTC().Format("15:04 UTC")}
	for _, rec := range recs {
		st := rec.StatusAt(now)
		d := deviceRow{Serial: rec.Serial, Label: rec.Device, Issued: day(rec.NotBefore), Expires: day(rec.NotAfter), Status: string(st), Valid: st == ca.StatusValid && rec.RenewedBy == ""}
		switch {
		case st == ca.StatusRevoked:
			d.Status = "revoked (" + reasonWords(rec.Reason) + ") " + day(rec.RevokedAt)
		case d.Valid:
			p.ValidCount++
		}
		p.Devices = append(p.Devices, d)
	}
	h.render(w, status, p)
}

func day(t time.Time) string { return t.UTC().Format("2 Jan 2006") }

// reasonWords names a revocation reason as the revoke form does.
func reasonWords(reason string) string {
	for _, o := range reasonOptions {
		if o.Value == reason {
			return o.Label
		}
	}
	return reason
}

// reasonOptions are the choices of the revoke form.
var reasonOptions = []struct{ Value, Label string }{
	{revoke.KeyCompromise.String(), "lost or stolen"},
	{revoke.CessationOfOperation.String(), "no longer used"},
	{revoke.Superseded.String(), "replaced"},
}

// plural is one when n is 1, many otherwise.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

package acme

import (
	"bytes"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"minica/ca"
)

// orderJSON is an order as the client reads it.
type orderJSON struct {
	Status         string       `json:"status"`
	Expires        time.Time    `json:"expires"`
	Identifiers    []Identifier `json:"identifiers"`
	Authorizations []string     `json:"authorizations"`
	Finalize       string       `json:"finalize"`
	Certificate    string       `json:"certificate,omitempty"`
	Error          *problem     `json:"error,omitempty"`
	Replaces       string       `json:"replaces,omitempty"`
}

// newOrderRequest is newOrder's payload.
type newOrderRequest struct {
	Identifiers []Identifier `json:"identifiers"`
	NotBefore   string       `json:"notBefore"`
	NotAfter    string       `json:"notAfter"`
	Replaces    string       `json:"replaces"`
}

// maxIdentifiers bounds the identifiers of one order.
const maxIdentifiers = 100

// serveNewOrder creates an order and its authorizations (RFC 8555
// section 7.4), for identifiers the account's policy and the CA allow,
// within its rate limits.
func (s *Server) serveNewOrder(w http.ResponseWriter, r *http.Request) (any, error) {
	req, err := s.verify(w, r, wantKID)
	if err != nil {
		return nil, err
	}
	var in newOrderRequest
	if err := decodePayload(req.payload, &in); err != nil {
		return nil, err
	}
	if in.NotBefore != "" || in.NotAfter != "" {
		return nil, malformed("this server sets a certificate's validity itself: send no notBefore or notAfter")
	}
	ids, err := normalizeIdentifiers(in.Identifiers)
	if err != nil {
		return nil, err
	}
	policy, err := s.policyOf(req.acct)
	if err != nil {
		return nil, err
	}
	if err := s.withCA(func(c *ca.CA) error {
		if err := c.CheckACMEIssuer(); err != nil {
			return issuerProblem(err)
		}
		return identifierProblem(c.CheckACMEIdentifiers(policy, ids))
	}); err != nil {
		return nil, err
	}
	replaced, err := s.checkReplaces(req.acct, in.Replaces, ids)
	if err != nil {
		return nil, err
	}
	o, azs := s.newOrder(req.acct, ids, in.Replaces)
	if err := s.admitOrder(req.acct, policy, o, azs, replaced); err != nil {
		return nil, err
	}
	s.log.Event("acme-order", "account", req.acct.ID, "order", o.ID, "identifiers", identifierList(ids), "client", r.RemoteAddr)
	return created(w, s.url(r, orderPath+o.ID), s.orderView(r, o, statusPending))
}

// checkReplaces checks an order's "replaces" (RFC 9773 section 5): when
// set, the ID of a certificate of this CA that the account's orders got,
// for one of the order's identifiers at least. It returns the
// certificate's serial (32 hex digits), or "" when replaces is unset.
func (s *Server) checkReplaces(a *account, id string, ids []Identifier) (string, error) {
	if id == "" {
		return "", nil
	}
	aki, serial, err := parseCertID(id)
	if err != nil {
		return "", err
	}
	err = s.withCA(func(c *ca.CA) error {
		if !bytes.Equal(aki, c.Cert.SubjectKeyId) {
			return malformed("replaces %q names a certificate of another CA", id)
		}
		rec, err := c.Record(serial)
		if errors.Is(err, ca.ErrNotFound) {
			return malformed("replaces %q names no certificate of this CA", id)
		}
		if err != nil {
			return err
		}
		if rec.ACMEAccount != a.ID {
			return unauthorized("replaces %q names a certificate of another account", id)
		}
		for _, i := range ids {
			if slices.Contains(rec.SANs, i.Type+":"+i.Value) {
				return nil
			}
		}
		return malformed("replaces %q names a certificate for none of the order's identifiers", id)
	})
	if err != nil {
		return "", err
	}
	return ca.SerialHex(serial), nil
}

// normalizeIdentifiers checks the identifiers' form and returns them in
// lowercase, without duplicates.
func normalizeIdentifiers(in []Identifier) ([]Identifier, error) {
	if len(in) == 0 || len(in) > maxIdentifiers {
		return nil, malformed("an order needs 1 to %d identifiers, not %d", maxIdentifiers, len(in))
	}
	var out []Identifier
	for _, id := range in {
		switch id.Type {
		case "dns":
			id.Value = strings.ToLower(strings.TrimSuffix(id.Value, "."))
		case "ip":
			ip := net.ParseIP(id.Value)
			if ip == nil {
				return nil, prob(http.StatusBadRequest, ErrMalformed, "identifier %q is not an IP address", id.Value)
			}
			id.Value = ip.String()
		default:
			return nil, prob(http.StatusBadRequest, ErrUnsupportedIdentifier, "identifier type %q: this server takes dns and ip", id.Type)
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out, nil
}

// identifierProblem maps a refusal of CheckACMEIdentifiers.
func identifierProblem(err error) error {
	if errors.Is(err, ca.ErrACMEIdentifier) {
		return prob(http.StatusBadRequest, ErrRejectedIdentifier, "%v", err)
	}
	return err
}

// issuerProblem answers ca.ErrACMECARevoked with serverInternal: the CA,
// revoked at its root, issues nothing, and says so.
func issuerProblem(err error) error {
	if errors.Is(err, ca.ErrACMECARevoked) {
		return prob(http.StatusInternalServerError, ErrServerInternal, "%v", err)
	}
	return err
}

func identifierList(ids []Identifier) string {
	var vs []string
	for _, id := range ids {
		vs = append(vs, id.Type+":"+id.Value)
	}
	return strings.Join(vs, ",")
}

// policyOf returns what the account may get: its binding's policy (the
// binding must not be disabled), or the open policy of NoEAB.
func (s *Server) policyOf(a *account) (*ca.ACMEPolicy, error) {
	if a.Binding == "" {
		p := ca.ACMEOpen()
		return &p, nil
	}
	var b *ca.ACMEBinding
	if err := s.withCA(func(c *ca.CA) (err error) { b, err = c.ACMEBinding(a.Binding); return err }); err != nil {
		return nil, bindingProblem(err)
	}
	if b.Disabled {
		return nil, bindingProblem(ca.ErrACMEBindingDisabled)
	}
	return &b.ACMEPolicy, nil
}

// newOrder makes a new order of ids and its authorizations, unwritten;
// the order keeps the authorization of its one identifier (order.Authz).
func (s *Server) newOrder(a *account, ids []Identifier, replaces string) (*order, []*authz) {
	now := s.cfg.Now().UTC()
	exp := now.Add(s.cfg.OrderLifetime)
	o := &order{ID: newID(16), Account: a.ID, Expires: exp, Identifiers: ids, Replaces: replaces, Created: now}
	var azs []*authz
	for _, id := range ids {
		az := &authz{ID: newID(16), Account: a.ID, Identifier: id, Status: statusPending, Expires: exp}
		if len(ids) == 1 {
			az.ID = embeddedAuthzID(o.ID)
			o.Authz = az
		}
		if v, ok := strings.CutPrefix(id.Value, "*."); ok && id.Type == "dns" {
			az.Identifier.Value, az.Wildcard = v, true
		}
		for _, t := range challengeTypes(az) {
			az.Challenges = append(az.Challenges, challenge{Type: t, Token: newID(32), Status: statusPending})
		}
		azs = append(azs, az)
		o.Authzs = append(o.Authzs, az.ID)
	}
	return o, azs
}

// challengeTypes are the challenges offered for an authorization: dns-01
// only for a wildcard, none of dns-01 for an IP (RFC 8738).
func challengeTypes(az *authz) []string {
	switch {
	case az.Wildcard:
		return []string{challDNS01}
	case az.Identifier.Type == "ip":
		return []string{challHTTP01, challTLSALPN01}
	}
	return []string{challHTTP01, challTLSALPN01, challDNS01}
}

// admitOrder counts the order against the binding's orders per hour and
// the account's pending authorizations, under the CA lock, and writes it
// with its authorizations.
func (s *Server) admitOrder(a *account, p *ca.ACMEPolicy, o *order, azs []*authz, replaced string) error {
	return s.locked(func(c *ca.CA) error {
		if err := s.checkNotReplaced(o.Replaces, replaced); err != nil {
			return err
		}
		cur, err := s.obj.account(a.ID)
		if err != nil {
			return err
		}
		if err := s.prunePending(cur); err != nil {
			return err
		}
		if p.PendingAuthz > 0 && len(cur.Pending)+len(azs) > p.PendingAuthz {
			pr := prob(http.StatusTooManyRequests, ErrRateLimited, "the account has %d pending authorizations; at most %d may be pending: finish or let them expire", len(cur.Pending), p.PendingAuthz)
			pr.retryAfter = time.Minute
			return pr
		}
		if err := c.CountACMEOrder(orderCounter(cur), p.OrdersPerHour, s.cfg.Now()); err != nil {
			if errors.Is(err, ca.ErrACMERateLimited) {
				pr := prob(http.StatusTooManyRequests, ErrRateLimited, "%v", err)
				pr.retryAfter = time.Until(s.cfg.Now().Truncate(time.Hour).Add(time.Hour))
				return pr
			}
			return err
		}
		for _, az := range azs {
			if o.Authz != az {
				if err := s.obj.createVolatile(kindAuthz, az.ID, az); err != nil {
					return err
				}
			}
			cur.Pending = append(cur.Pending, pendingAuthz{az.ID, az.Expires})
		}
		if err := s.obj.createVolatile(kindOrder, o.ID, o); err != nil {
			return err
		}
		if replaced != "" {
			if err := s.obj.putVolatile(kindReplaced, replaced, replacement{Order: o.ID}); err != nil {
				return err
			}
		}
		return s.obj.putVolatile(kindAccount, cur.ID, cur)
	})
}

// checkNotReplaced refuses, with alreadyReplaced, an order replacing the
// certificate of serial (certID in the request) when another order that
// is not invalid replaces it already (RFC 9773 section 5). It runs under
// the lock of admitOrder, which then marks the certificate replaced by
// the new order.
func (s *Server) checkNotReplaced(certID, serial string) error {
	if serial == "" {
		return nil
	}
	var rep replacement
	err := s.obj.get(kindReplaced, serial, "replacement", &rep)
	var pr *problem
	if errors.As(err, &pr) {
		return nil // not replaced yet
	}
	if err != nil {
		return err
	}
	prev, err := s.obj.order(rep.Order)
	if errors.As(err, &pr) {
		return nil // the replacing order is gone
	}
	if err != nil {
		return err
	}
	st, err := s.orderStatus(prev)
	if err != nil || st == statusInvalid {
		return err
	}
	return prob(http.StatusConflict, ErrAlreadyReplaced, "replaces %q: order %s replaces that certificate already (it is %s)", certID, prev.ID, st)
}

// orderCounter names the orders counted together against the orders per
// hour: a binding's accounts together, an account without a binding
// alone.
func orderCounter(a *account) string {
	if a.Binding != "" {
		return a.Binding
	}
	return "a" + a.ID
}

// prunePending drops from a.Pending the authorizations expired or no
// longer pending.
func (s *Server) prunePending(a *account) error {
	now := s.cfg.Now()
	kept := a.Pending[:0]
	for _, p := range a.Pending {
		if !now.Before(p.Expires) {
			continue
		}
		az, err := s.obj.authz(p.ID)
		if err != nil {
			var pr *problem
			if errors.As(err, &pr) {
				continue
			}
			return err
		}
		if az.Status == statusPending {
			kept = append(kept, p)
		}
	}
	a.Pending = kept
	return nil
}

// orderStatus is an order's status now: stored once processing, valid or
// invalid; else invalid when expired or when an authorization is
// invalid, ready when all are valid, pending otherwise.
func (s *Server) orderStatus(o *order) (string, error) {
	switch o.Status {
	case statusProcessing, statusValid, statusInvalid:
		return o.Status, nil
	}
	if !s.cfg.Now().Before(o.Expires) {
		return statusInvalid, nil
	}
	ready := true
	for _, id := range o.Authzs {
		az, err := s.obj.authzOf(o, id)
		if err != nil {
			return "", err
		}
		switch s.authzStatus(az) {
		case statusValid:
		case statusPending:
			ready = false
		default:
			return statusInvalid, nil
		}
	}
	if ready {
		return statusReady, nil
	}
	return statusPending, nil
}

func (s *Server) orderView(r *http.Request, o *order, status string) orderJSON {
	v := orderJSON{Status: status, Expires: o.Expires, Identifiers: o.Identifiers, Finalize: s.url(r, orderPath+o.ID+"/finalize"),
		Error: o.Error, Replaces: o.Replaces}
	for _, id := range o.Authzs {
		v.Authorizations = append(v.Authorizations, s.url(r, authzPath+id))
	}
	if o.Serial != "" {
		v.Certificate = s.url(r, certPath+o.Serial)
	}
	return v
}

// ownOrder reads the order of the path's ID, which must be the
// account's.
func (s *Server) ownOrder(a *account, id string) (*order, error) {
	o, err := s.obj.order(id)
	if err != nil {
		return nil, err
	}
	if o.Account != a.ID {
		return nil, unauthorized("the order is another account's")
	}
	return o, nil
}

// serveOrder answers POST-as-GET of an order, and its finalize.
func (s *Server) serveOrder(w http.ResponseWriter, r *http.Request) (any, error) {
	req, err := s.verify(w, r, wantKID)
	if err != nil {
		return nil, err
	}
	id, finalize := strings.CutSuffix(strings.TrimPrefix(r.URL.Path, orderPath), "/finalize")
	o, err := s.ownOrder(req.acct, id)
	if err != nil {
		return nil, err
	}
	if finalize {
		return s.finalize(w, r, req, o)
	}
	if !req.postAsGet() {
		return nil, malformed("an order is read with POST-as-GET (an empty payload)")
	}
	st, err := s.orderStatus(o)
	if err != nil {
		return nil, err
	}
	return s.orderView(r, o, st), nil
}

// authzJSON is an authorization as the client reads it.
type authzJSON struct {
	Identifier Identifier      `json:"identifier"`
	Status     string          `json:"status"`
	Expires    time.Time       `json:"expires"`
	Challenges []challengeJSON `json:"challenges"`
	Wildcard   bool            `json:"wildcard,omitempty"`
}

type challengeJSON struct {
	Type      string     `json:"type"`
	URL       string     `json:"url"`
	Token     string     `json:"token"`
	Status    string     `json:"status"`
	Validated *time.Time `json:"validated,omitempty"`
	Error     *problem   `json:"error,omitempty"`
}

// authzStatus is an authorization's status now: expired past its
// expiry unless it ended before.
func (s *Server) authzStatus(az *authz) string {
	if (az.Status == statusPending || az.Status == statusValid) && !s.cfg.Now().Before(az.Expires) {
		return statusExpired
	}
	return az.Status
}

func (s *Server) authzView(r *http.Request, az *authz) authzJSON {
	v := authzJSON{Identifier: az.Identifier, Status: s.authzStatus(az), Expires: az.Expires, Wildcard: az.Wildcard}
	for _, ch := range az.Challenges {
		v.Challenges = append(v.Challenges, s.challengeView(r, az, ch))
	}
	return v
}

func (s *Server) challengeView(r *http.Request, az *authz, ch challenge) challengeJSON {
	v := challengeJSON{Type: ch.Type, URL: s.url(r, challPath+az.ID+"/"+ch.Type), Token: ch.Token, Status: ch.Status, Error: ch.Error}
	if !ch.Validated.IsZero() {
		v.Validated = &ch.Validated
	}
	return v
}

// ownAuthz reads an authorization, which must be the account's.
func (s *Server) ownAuthz(a *account, id string) (*authz, error) {
	az, err := s.obj.authz(id)
	if err != nil {
		return nil, err
	}
	if az.Account != a.ID {
		return nil, unauthorized("the authorization is another account's")
	}
	return az, nil
}

// serveAuthz answers POST-as-GET of an authorization, and its
// deactivation (RFC 8555 section 7.5.2).
func (s *Server) serveAuthz(w http.ResponseWriter, r *http.Request) (any, error) {
	req, err := s.verify(w, r, wantKID)
	if err != nil {
		return nil, err
	}
	az, err := s.ownAuthz(req.acct, strings.TrimPrefix(r.URL.Path, authzPath))
	if err != nil {
		return nil, err
	}
	if req.postAsGet() {
		s.revive(az, req.acct)
		retryWhileValidating(w, az)
		return s.authzView(r, az), nil
	}
	var in struct {
		Status string `json:"status"`
	}
	if err := decodePayload(req.payload, &in); err != nil {
		return nil, err
	}
	if in.Status != statusDeactivated {
		return nil, malformed("an authorization's status can only be changed to %q", statusDeactivated)
	}
	if err := s.deactivate(az); err != nil {
		return nil, err
	}
	return s.authzView(r, az), nil
}

// deactivate deactivates a pending or valid az under the CA lock, which
// finalize holds: az is read again there, and an order that keeps it
// (objects.putAuthz) never loses a state finalize wrote.
func (s *Server) deactivate(az *authz) error {
	return s.locked(func(*ca.CA) error {
		var refused error
		cur, err := s.obj.updateAuthz(az.ID, func(cur *authz) bool {
			if st := s.authzStatus(cur); st != statusPending && st != statusValid {
				refused = malformed("the authorization is %s", st)
				return false
			}
			cur.Status = statusDeactivated
			return true
		})
		if err != nil {
			return err
		}
		*az = *cur
		return refused
	})
}

// keyAuthorization is token.thumbprint (RFC 8555 section 8.1).
func keyAuthorization(token, thumb string) string { return token + "." + thumb }

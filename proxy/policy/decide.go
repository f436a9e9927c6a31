package policy

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"minica/identity"
)

// Reasons of the policy's refusals, as Decision.Reason holds them and the
// proxy logs them.
const (
	// ReasonNotAllowed: the route's rule does not let the client through,
	// or the route refuses everyone (403).
	ReasonNotAllowed = "not-allowed"
	// ReasonNoRoute: no route matches the request's host and path (404).
	ReasonNoRoute = "no-route"
	// ReasonMisdirected: the Host (HTTP/2 :authority) names another host
	// than the TLS SNI of the connection (421, the client retries on a
	// connection of its own for that host).
	ReasonMisdirected = "misdirected"
	// ReasonBadPath: an encoded '/' or '\', a raw '\', an encoded control
	// character, a bad percent-encoding, or a path parameter on a dot
	// segment or on an empty one before the last, in the path (400).
	ReasonBadPath = "bad-path"
	// ReasonDaysLeft: the route's rule wants more days left on the client
	// certificate than it has (403).
	ReasonDaysLeft = "too-few-days-left"
)

// Decision is the policy's answer for one request of a verified client.
type Decision struct {
	// Route is the route that matched, nil for ReasonNoRoute and the
	// refusals before routing (ReasonMisdirected, ReasonBadPath).
	Route *Route
	// Reason is "" when the client may go through, else a Reason constant.
	Reason string
	// Status is the HTTP status of a refusal, 0 when allowed.
	Status int
	// Host is the request's host as matched: lowercase, no port, no
	// trailing dot.
	Host string
	// Path is the clean path, percent-encoded: what the upstream gets;
	// routes match it without its path parameters (see barePath).
	Path string
	// Why says which clause let the client through or why it was refused,
	// only when asked for (Policy.Explain).
	Why string
}

// Request is what the policy routes by.
type Request struct {
	Host string // the Host header or HTTP/2 :authority, as received
	SNI  string // the TLS server name of the connection, "" if none
	Path string // the path as received, percent-encoded (URL.EscapedPath)
}

// Decide routes in and judges id (verified) by the rule of its route, at now.
func (p *Policy) Decide(in Request, id *identity.Identity, now time.Time) Decision {
	return p.decide(in, id, now, false)
}

// Explain is Decide with Decision.Why filled in.
func (p *Policy) Explain(in Request, id *identity.Identity, now time.Time) Decision {
	return p.decide(in, id, now, true)
}

func (p *Policy) decide(in Request, id *identity.Identity, now time.Time, explain bool) Decision {
	d := Decision{Host: normHost(in.Host)}
	path, err := cleanPath(in.Path)
	if err != nil {
		d.Reason, d.Status = ReasonBadPath, http.StatusBadRequest
		if explain {
			d.Why = err.Error()
		}
		return d
	}
	d.Path = path
	bare := barePath(path)
	i := p.lookup(d.Host, bare)
	if i < 0 {
		d.Reason, d.Status = ReasonNoRoute, http.StatusNotFound
		if explain {
			d.Why = fmt.Sprintf("no route matches host %q and path %q", d.Host, path)
		}
		return d
	}
	// A Host that names another host than the connection's SNI is
	// refused when the SNI would take the request to another route (or
	// none): the header alone never picks a route the connection was not
	// opened for. With one route for both, as under a wildcard or "*",
	// the request goes on.
	if in.SNI != "" {
		if sni := normHost(in.SNI); sni != d.Host && p.lookup(sni, bare) != i {
			d.Reason, d.Status = ReasonMisdirected, http.StatusMisdirectedRequest
			if explain {
				d.Why = fmt.Sprintf("the host %q takes another route than the TLS server name %q of the connection", d.Host, sni)
			}
			return d
		}
	}
	d.Route = p.Routes[i]
	d.Reason, d.Why = d.Route.Rule.judge(id, now, explain)
	if d.Reason != "" {
		d.Status = http.StatusForbidden
	}
	return d
}

// lookup returns the index of the first route matching host and the bare
// clean path (see barePath), or -1. Only the routes of the exact host, of
// its parent's wildcard and of "*" are looked at, each by a map lookup per
// path segment, so that the cost does not grow with the number of routes.
func (p *Policy) lookup(host, path string) int {
	best := -1
	consider := func(i int) {
		if i >= 0 && (best < 0 || i < best) {
			best = i
		}
	}
	consider(p.exact[host].lookup(path))
	if dot := strings.IndexByte(host, '.'); dot > 0 {
		consider(p.wild[host[dot+1:]].lookup(path))
	}
	consider(p.any.lookup(path))
	return best
}

// judge returns "" if the rule lets id through at now, else the reason.
// With explain, why names the clause that decided.
func (r *Rule) judge(id *identity.Identity, now time.Time, explain bool) (reason, why string) {
	if r.Refuse {
		if explain {
			why = "the route refuses every client"
		}
		return ReasonNotAllowed, why
	}
	if r.HasMinDays && now.Add(time.Duration(r.MinDaysLeft)*24*time.Hour).After(id.NotAfter) {
		if explain {
			why = fmt.Sprintf("the certificate has %s left, the rule wants at least %d days (min_days_left)", daysLeftText(id.NotAfter.Sub(now)), r.MinDaysLeft)
		}
		return ReasonDaysLeft, why
	}
	clause, value, ok := r.match(id)
	if !ok {
		if explain {
			why = "no clause of the rule matches the certificate (" + identitySummary(id) + ")"
		}
		return ReasonNotAllowed, why
	}
	if explain {
		why = "allowed by " + clause
		if value != "" {
			why += " " + strconv.Quote(value)
		}
		if r.HasMinDays {
			why += fmt.Sprintf(", with %s left (min_days_left %d)", daysLeftText(id.NotAfter.Sub(now)), r.MinDaysLeft)
		}
	}
	return "", why
}

func daysLeftText(d time.Duration) string {
	return strconv.FormatFloat(d.Hours()/24, 'f', 1, 64) + " days"
}

func identitySummary(id *identity.Identity) string {
	parts := []string{"cn " + strconv.Quote(id.CN)}
	add := func(name string, vals []string) {
		for _, v := range vals {
			parts = append(parts, name+" "+strconv.Quote(v))
		}
	}
	if id.Email != "" {
		add("email", []string{id.Email})
	}
	add("o", id.O)
	add("ou", id.OU)
	add("dns", id.DNSNames)
	add("uri", id.URIs)
	parts = append(parts, "serial "+id.SerialHex, "issuer "+strconv.Quote(id.IssuerDN))
	return strings.Join(parts, ", ")
}

// match returns the first clause of r that id satisfies, in the documented
// order, with the value that matched.
func (r *Rule) match(id *identity.Identity) (clause, value string, ok bool) {
	if r.Any {
		return "any", "", true
	}
	if r.cn.has(id.CN) {
		return "cn", id.CN, true
	}
	if len(r.email)+len(r.emailDomain) > 0 {
		for _, e := range emailsOf(id) {
			n := normEmail(e)
			if r.email.has(n) {
				return "email", e, true
			}
			if at := strings.LastIndexByte(n, '@'); at >= 0 && r.emailDomain.has(n[at+1:]) {
				return "email_domain", e, true
			}
		}
	}
	for _, v := range id.O {
		if r.o.has(v) {
			return "o", v, true
		}
	}
	for _, v := range id.OU {
		if r.ou.has(v) {
			return "ou", v, true
		}
	}
	for _, v := range id.DNSNames {
		if r.dns.has(lowerASCII(strings.TrimSuffix(v, "."))) {
			return "dns", v, true
		}
	}
	for _, v := range id.URIs {
		if r.uri.has(v) {
			return "uri", v, true
		}
		for _, prefix := range r.uriPrefix {
			if rest, ok := strings.CutPrefix(v, prefix); ok && globRest(rest) {
				return "uri", v, true
			}
		}
	}
	if r.serial.has(id.SerialHex) {
		return "serial", id.SerialHex, true
	}
	if r.issuer.has(id.IssuerDN) {
		return "issuer", id.IssuerDN, true
	}
	if len(r.issuerSHA) > 0 && len(id.Chain) > 0 {
		if fp := identity.Fingerprint(id.Chain[0]); r.issuerSHA.has(fp) {
			return "issuer_sha256", fp, true
		}
	}
	return "", "", false
}

// globRest reports whether rest, what follows the prefix of a uri clause
// ending in "/*", may match: not empty, no dot segment, no query or
// fragment.
func globRest(rest string) bool {
	if rest == "" || strings.ContainsAny(rest, "?#") {
		return false
	}
	for seg := range strings.SplitSeq(rest, "/") {
		if seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// emailsOf is every address of id: Identity.Email, then the rfc822Name SANs.
func emailsOf(id *identity.Identity) []string {
	if id.Email == "" || (len(id.Emails) > 0 && id.Emails[0] == id.Email) {
		return id.Emails
	}
	return append([]string{id.Email}, id.Emails...)
}

// normEmail lowercases the ASCII letters of the domain of an address (after
// its last '@'); the local part is kept as it is.
func normEmail(s string) string {
	at := strings.LastIndexByte(s, '@')
	if at < 0 || !hasUpperASCII(s[at+1:]) {
		return s
	}
	return s[:at+1] + lowerASCII(s[at+1:])
}

func hasUpperASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			return true
		}
	}
	return false
}

// lowerASCII lowercases the ASCII letters of s, and only those.
func lowerASCII(s string) string {
	if !hasUpperASCII(s) {
		return s
	}
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

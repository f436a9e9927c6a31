package policy

import (
	"crypto/sha256"
	"crypto/x509"
	"strings"

	"minica/internal/endpoint"
)

// Policy is a compiled policy file: routes matched by host and path prefix,
// each with its upstream and its rule (see docs/proxy.md, "Routes and
// policy"). It is immutable and safe for concurrent use; the proxy swaps
// in a new one on reload.
type Policy struct {
	// Routes in file order; the first that matches a request wins.
	Routes []*Route
	exact  map[string]*pathIndex // by host
	wild   map[string]*pathIndex // by the parent of *.parent
	any    *pathIndex            // host "*"
	// sum is the SHA-256 of the file and of the upstream CA files it names,
	// to tell a changed policy from the one in use; dataSum that of the
	// file alone, and caFiles that of each CA file by its path, to skip
	// compiling an unchanged file again.
	sum     [32]byte
	dataSum [32]byte
	caFiles map[string][32]byte
}

// Unchanged reports whether data and the CA files, read by readFile, are
// those p was compiled from: a reload that reads them need not compile
// them again.
func (p *Policy) Unchanged(data []byte, readFile func(string) ([]byte, error)) bool {
	if sha256.Sum256(data) != p.dataSum {
		return false
	}
	for path, sum := range p.caFiles {
		b, err := readFile(path)
		if err != nil || sha256.Sum256(b) != sum {
			return false
		}
	}
	return true
}

// Equal reports whether p and q were compiled from the same file and
// upstream CA files, byte for byte.
func (p *Policy) Equal(q *Policy) bool { return p.sum == q.sum }

// Route is one route of a Policy.
type Route struct {
	Index    int    // from 1, in file order
	Name     string // the "name" field, or "route N"
	Host     string // "example.com", "*.example.com" or "*", lowercase
	Path     string // the prefix, clean and percent-encoded as paths are matched
	Upstream string // as written; "" for a route that refuses
	Rule     *Rule
	Target   endpoint.Upstream // Upstream, parsed
	// UpstreamRootCAs verify an https upstream: the certificates of the
	// route's upstream_ca file, nil for the system roots.
	UpstreamRootCAs *x509.CertPool
	// UpstreamKey is the same for routes with the same upstream and CA
	// bytes: they may share one connection pool.
	UpstreamKey string
	upstreamCA  string // the upstream_ca file, as written
	off         int    // where the route starts in the file
}

// Rule decides which verified clients a route lets through: any one of its
// identity clauses matching, and the certificate having MinDaysLeft days
// left when given.
type Rule struct {
	Name   string // the name under "rules", "" for a route's own "allow"
	Any    bool   // every verified client (still subject to MinDaysLeft)
	Refuse bool   // nobody: the route's "refuse": true
	// MinDaysLeft, when HasMinDays, wants NotAfter at least that many
	// 24-hour days after now.
	MinDaysLeft int
	HasMinDays  bool

	cn, email, emailDomain, o, ou, dns, uri, serial, issuer, issuerSHA set
	uriPrefix                                                          []string
}

// set is the values of one clause of a rule, normalized as they are
// matched.
type set map[string]struct{}

func (s set) has(v string) bool { _, ok := s[v]; return ok }

// Allow are the allow-lists of a proxy without a policy file: a client
// whose CN, an email, an OU or a URI SAN is listed goes through.
type Allow struct {
	CN, Email, OU, URI []string
}

// OneRoute is the policy of a proxy without a policy file: one route,
// named "upstream", for every host and path, to upstream (as written, up
// parsed, verified against rootCAs if https), whose rule lets through the
// clients of allow, or every verified client when allow lists none.
func OneRoute(upstream string, up endpoint.Upstream, rootCAs *x509.CertPool, allow Allow) *Policy {
	rule := &Rule{Any: true}
	if len(allow.CN)+len(allow.Email)+len(allow.OU)+len(allow.URI) > 0 {
		setOf := func(vals []string, norm func(string) string) set {
			s := set{}
			for _, v := range vals {
				s[norm(v)] = struct{}{}
			}
			return s
		}
		same := func(s string) string { return s }
		rule = &Rule{cn: setOf(allow.CN, same), email: setOf(allow.Email, normEmail),
			ou: setOf(allow.OU, same), uri: setOf(allow.URI, same)}
	}
	rt := &Route{Index: 1, Name: "upstream", Host: "*", Path: "/", Upstream: upstream, Rule: rule,
		Target: up, UpstreamRootCAs: rootCAs, UpstreamKey: "legacy"}
	pol := &Policy{Routes: []*Route{rt}}
	pol.index()
	return pol
}

// index builds the host maps of p.
func (p *Policy) index() {
	p.exact, p.wild = map[string]*pathIndex{}, map[string]*pathIndex{}
	get := func(m map[string]*pathIndex, k string) *pathIndex {
		if m[k] == nil {
			m[k] = &pathIndex{first: map[string]int{}}
		}
		return m[k]
	}
	for i, rt := range p.Routes {
		switch {
		case rt.Host == "*":
			if p.any == nil {
				p.any = &pathIndex{first: map[string]int{}}
			}
			p.any.add(rt.Path, i)
		case strings.HasPrefix(rt.Host, "*."):
			get(p.wild, rt.Host[2:]).add(rt.Path, i)
		default:
			get(p.exact, rt.Host).add(rt.Path, i)
		}
	}
}

// pathIndex maps the path prefixes of the routes of one host pattern to the
// first such route.
type pathIndex struct {
	first  map[string]int // prefix -> index into Policy.Routes
	maxLen int
}

func (ix *pathIndex) add(prefix string, i int) {
	if _, ok := ix.first[prefix]; !ok {
		ix.first[prefix] = i
	}
	ix.maxLen = max(ix.maxLen, len(prefix))
}

// lookup returns the first route of ix whose prefix matches the bare clean
// path p (see barePath) on a segment boundary, or -1: "/admin" matches
// /admin, /admin/ and /admin/x, never /administrator.
func (ix *pathIndex) lookup(p string) int {
	if ix == nil {
		return -1
	}
	best := -1
	try := func(prefix string) {
		if i, ok := ix.first[prefix]; ok && (best < 0 || i < best) {
			best = i
		}
	}
	try("/")
	for j := 1; j < len(p) && j <= ix.maxLen; j++ {
		if p[j] == '/' {
			try(p[:j])
		}
	}
	if len(p) > 1 && len(p) <= ix.maxLen {
		try(p)
	}
	return best
}

package policy

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"minica/formats"
	"minica/identity"
	"minica/internal/endpoint"
)

// Options are what Parse needs besides the file's bytes.
type Options struct {
	// ReadFile reads an upstream_ca file, named relative to the policy
	// file's directory; nil means os.ReadFile.
	ReadFile func(name string) ([]byte, error)
	// ParseCerts parses an upstream_ca file; nil means
	// formats.ParseCertificates (PEM or DER).
	ParseCerts func(data []byte) ([]*x509.Certificate, error)
	// CAs, when not nil, is the CA bundle of the clients: every "issuer"
	// and "issuer_sha256" must name one of them.
	CAs []*x509.Certificate
}

// LoadFile reads and compiles the policy in file; see Parse.
func LoadFile(file string, opt Options) (*Policy, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading policy %q: %w", file, err)
	}
	return Parse(file, data, opt)
}

// Parse compiles the policy data read from file (the name errors carry,
// and the directory upstream_ca files are relative to). Its errors are
// Errors, each with its line and column, except a failure to read an
// upstream CA file, which names that file.
func Parse(file string, data []byte, opt Options) (*Policy, error) {
	if opt.ReadFile == nil {
		opt.ReadFile = os.ReadFile
	}
	if opt.ParseCerts == nil {
		opt.ParseCerts = formats.ParseCertificates
	}
	r := newJSONReader(file, data)
	pc := &policyCompiler{r: r, opt: opt, dir: filepath.Dir(file), rules: map[string]*Rule{}}
	h := sha256.New()
	h.Write(data)
	pc.hash = func(b []byte) { h.Write(b) }
	pc.top()
	r.end()
	if len(r.errs) > 0 {
		r.positions()
		return nil, r.errs
	}
	if pc.readErr != nil {
		return nil, pc.readErr
	}
	pol := &Policy{Routes: pc.routes, dataSum: sha256.Sum256(data), caFiles: pc.caPaths}
	h.Sum(pol.sum[:0])
	pol.index()
	return pol, nil
}

type policyCompiler struct {
	r       *jsonReader
	opt     Options
	dir     string
	rules   map[string]*Rule
	refs    []ruleRef // "rule" fields, resolved after the whole file is read
	routes  []*Route
	hash    func([]byte)
	readErr error
	caFiles map[string]*x509.CertPool
	caSums  map[string]string   // SHA-256 of each CA file, hex, by its name in the file
	caPaths map[string][32]byte // SHA-256 of each CA file by its path
}

type ruleRef struct {
	route *Route
	name  string
	off   int
}

func (pc *policyCompiler) top() {
	r := pc.r
	sawRoutes := false
	ok := r.object("policy", func(key string, off int) {
		switch key {
		case "rules":
			r.object("rules", func(name string, off int) {
				if !validRuleName(name) {
					r.errAt(off, "rules: name %q: want letters, digits, '-', '_' or '.'", name)
				}
				if rule := pc.rule("rules."+name, off); rule != nil {
					rule.Name = name
					pc.rules[name] = rule
				}
			})
		case "routes":
			sawRoutes = true
			tok, off, ok := r.next()
			if !ok {
				return
			}
			if tok != json.Delim('[') {
				r.errAt(off, "routes: want a list of routes, got %s", kind(tok))
				r.skipRest(tok)
				return
			}
			for n := 1; ; n++ {
				if !r.dec.More() {
					if _, _, ok := r.next(); ok && n == 1 {
						r.errAt(off, "routes: empty list: a policy needs at least one route")
					}
					return
				}
				pc.route(n)
				if r.fatal {
					return
				}
			}
		default:
			r.unknown("policy", key, off, "rules, routes")
		}
	})
	if ok && !sawRoutes {
		r.errAt(0, "policy: no \"routes\": a policy needs at least one route")
	}
	for _, ref := range pc.refs {
		rule, found := pc.rules[ref.name]
		if !found {
			r.errAt(ref.off, "route %d: rule %q is not under \"rules\"", ref.route.Index, ref.name)
			continue
		}
		ref.route.Rule = rule
	}
	pc.duplicates()
}

func validRuleName(s string) bool {
	return s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") == ""
}

const routeFields = "name, host, path, upstream, upstream_ca, allow, rule, refuse"

func (pc *policyCompiler) route(n int) {
	r := pc.r
	rt := &Route{Index: n, Name: fmt.Sprintf("route %d", n), Path: "/"}
	what := fmt.Sprintf("route %d", n)
	start := r.peek()
	rt.off = start
	var upOff, caOff int
	var sawHost, refuse bool
	var ruleFields []string
	ok := r.object(what, func(key string, off int) {
		switch key {
		case "name":
			if s, _, ok := r.str(what + ": name"); ok {
				if s == "" {
					r.errAt(off, "%s: empty name", what)
				}
				rt.Name = s
			}
		case "host":
			s, voff, ok := r.str(what + ": host")
			sawHost = true
			if ok {
				h, err := parseHostPattern(s)
				if err != nil {
					r.errAt(voff, "%s: host %q: %v", what, s, err)
				}
				rt.Host = h
			}
		case "path":
			if s, voff, ok := r.str(what + ": path"); ok {
				p, err := parsePathPrefix(s)
				if err != nil {
					r.errAt(voff, "%s: path %q: %v", what, s, err)
					p = s
				}
				rt.Path = p
			}
		case "upstream":
			if s, voff, ok := r.str(what + ": upstream"); ok {
				upOff = voff
				up, err := endpoint.ParseUpstream(s)
				if err != nil {
					r.errAt(voff, "%s: upstream %v", what, err)
				}
				rt.Upstream, rt.Target = s, up
			}
		case "upstream_ca":
			if s, voff, ok := r.str(what + ": upstream_ca"); ok {
				caOff = voff
				if s == "" {
					r.errAt(voff, "%s: empty upstream_ca", what)
				}
				rt.upstreamCA = s
			}
		case "allow":
			ruleFields = append(ruleFields, key)
			rt.Rule = pc.rule(what+": allow", off)
		case "rule":
			ruleFields = append(ruleFields, key)
			if s, voff, ok := r.str(what + ": rule"); ok {
				pc.refs = append(pc.refs, ruleRef{route: rt, name: s, off: voff})
			}
		case "refuse":
			ruleFields = append(ruleFields, key)
			if b, voff, ok := r.boolean(what + ": refuse"); ok {
				if !b {
					r.errAt(voff, "%s: refuse: want true or no field; a route lets clients through by \"allow\" or \"rule\"", what)
				}
				refuse = true
				rt.Rule = &Rule{Refuse: true}
			}
		default:
			r.unknown(what, key, off, routeFields)
		}
	})
	if !ok {
		return
	}
	pc.routes = append(pc.routes, rt)
	switch {
	case !sawHost:
		r.errAt(start, "%s: no host: give \"host\": \"NAME\", \"*.DOMAIN\" or \"*\"", what)
	case len(ruleFields) == 0:
		r.errAt(start, "%s (host %q, path %q): no rule: give \"allow\", \"rule\" or \"refuse\": true (a route without a rule would refuse every client)", what, rt.Host, rt.Path)
	case len(ruleFields) > 1:
		r.errAt(start, "%s: %s exclude each other", what, strings.Join(ruleFields, " and "))
	}
	switch {
	case refuse && rt.Upstream != "":
		r.errAt(upOff, "%s: a route that refuses has no upstream", what)
	case !refuse && rt.Upstream == "" && len(ruleFields) > 0:
		r.errAt(start, "%s: no upstream: give \"upstream\": http://HOST:PORT, https://HOST:PORT or unix:/PATH", what)
	}
	if rt.upstreamCA != "" {
		if rt.Target.URL == nil || rt.Target.URL.Scheme != "https" || rt.Target.Socket != "" {
			r.errAt(caOff, "%s: upstream_ca is only for an https upstream", what)
			return
		}
		rt.UpstreamRootCAs = pc.readCA(rt.upstreamCA)
	}
	rt.UpstreamKey = rt.Upstream + "\x00" + rt.upstreamCA + "\x00" + pc.caSums[rt.upstreamCA]
}

// readCA reads an upstream CA file once per policy.
func (pc *policyCompiler) readCA(name string) *x509.CertPool {
	if pool, ok := pc.caFiles[name]; ok {
		return pool
	}
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(pc.dir, name)
	}
	data, err := pc.opt.ReadFile(path)
	var certs []*x509.Certificate
	if err == nil {
		certs, err = pc.opt.ParseCerts(data)
	}
	if err != nil {
		if pc.readErr == nil {
			pc.readErr = fmt.Errorf("reading upstream CA %q: %w", path, err)
		}
		return nil
	}
	pc.hash(data)
	sum := sha256.Sum256(data)
	if pc.caSums == nil {
		pc.caSums = map[string]string{}
	}
	pc.caSums[name] = hex.EncodeToString(sum[:])
	if pc.caPaths == nil {
		pc.caPaths = map[string][32]byte{}
	}
	pc.caPaths[path] = sum
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	if pc.caFiles == nil {
		pc.caFiles = map[string]*x509.CertPool{}
	}
	pc.caFiles[name] = pool
	return pool
}

// duplicates reports a route with the host and path of an earlier one: it
// could never match.
func (pc *policyCompiler) duplicates() {
	type key struct{ host, path string }
	first := map[key]int{}
	for _, rt := range pc.routes {
		k := key{rt.Host, rt.Path}
		if n, ok := first[k]; ok && rt.Host != "" {
			pc.r.errAt(rt.off, "route %d: same host %q and path %q as route %d, which always matches first", rt.Index, rt.Host, rt.Path, n)
			continue
		}
		first[k] = rt.Index
	}
}

const ruleFieldNames = "any, cn, email, email_domain, o, ou, dns, uri, serial, issuer, issuer_sha256, min_days_left"

// rule reads a rule object.
func (pc *policyCompiler) rule(what string, off int) *Rule {
	r := pc.r
	rule := &Rule{}
	clauses := 0
	ok := r.object(what, func(key string, koff int) {
		list := func(dst *set, norm func(string) (string, error)) {
			vals, _, ok := r.strings(what + ": " + key)
			if !ok {
				return
			}
			clauses++
			*dst = set{}
			for _, v := range vals {
				n, err := norm(v.s)
				if err != nil {
					r.errAt(v.off, "%s: %s %q: %v", what, key, v.s, err)
					continue
				}
				(*dst)[n] = struct{}{}
			}
		}
		switch key {
		case "any":
			if b, voff, ok := r.boolean(what + ": any"); ok {
				if !b {
					r.errAt(voff, "%s: any: want true or no field", what)
				}
				rule.Any = true
				clauses++
			}
		case "cn":
			list(&rule.cn, nonEmpty)
		case "email":
			list(&rule.email, normEmailClause)
		case "email_domain":
			list(&rule.emailDomain, normDomainClause)
		case "o":
			list(&rule.o, nonEmpty)
		case "ou":
			list(&rule.ou, nonEmpty)
		case "dns":
			list(&rule.dns, normDomainClause)
		case "uri":
			list(&rule.uri, normURIClause)
			for u := range rule.uri {
				if prefix, ok := strings.CutSuffix(u, "/*"); ok {
					delete(rule.uri, u)
					rule.uriPrefix = append(rule.uriPrefix, prefix+"/")
				}
			}
			slices.Sort(rule.uriPrefix)
		case "serial":
			list(&rule.serial, normSerialClause)
		case "issuer":
			list(&rule.issuer, func(dn string) (string, error) {
				if dn == "" {
					return "", fmt.Errorf("empty value")
				}
				if pc.opt.CAs != nil && !slices.ContainsFunc(pc.opt.CAs, func(c *x509.Certificate) bool { return subjectDN(c) == dn }) {
					return "", fmt.Errorf("no CA of the bundle (%s)", caNames(pc.opt.CAs))
				}
				return dn, nil
			})
		case "issuer_sha256":
			list(&rule.issuerSHA, func(s string) (string, error) {
				fp, err := normFingerprint(s)
				if err == nil && pc.opt.CAs != nil && !slices.ContainsFunc(pc.opt.CAs, func(c *x509.Certificate) bool { return identity.Fingerprint(c) == fp }) {
					err = fmt.Errorf("no CA of the bundle (%s)", caNames(pc.opt.CAs))
				}
				return fp, err
			})
		case "min_days_left":
			if n, _, ok := r.integer(what+": min_days_left", 0, 36500); ok {
				rule.MinDaysLeft, rule.HasMinDays = int(n), true
			}
		default:
			r.unknown(what, key, koff, ruleFieldNames)
		}
	})
	if !ok {
		return nil
	}
	switch {
	case clauses == 0 && !rule.HasMinDays:
		r.errAt(off, "%s: no clause: give at least one of %s (\"any\": true lets every verified client through)", what, ruleFieldNames)
	case rule.Any && clauses > 1:
		r.errAt(off, "%s: \"any\": true and identity clauses exclude each other", what)
	case clauses == 0:
		rule.Any = true // min_days_left alone
	}
	return rule
}

// normURIClause checks a URI SAN clause: exact, or with '*' as the whole
// last path segment after SCHEME://AUTHORITY/.
func normURIClause(u string) (string, error) {
	if u == "" {
		return "", fmt.Errorf("empty value")
	}
	if !strings.Contains(u, "*") {
		return u, nil
	}
	prefix, ok := strings.CutSuffix(u, "/*")
	i := strings.Index(prefix, "://")
	if !ok || strings.Contains(prefix, "*") || i <= 0 || prefix[i+3:] == "" || prefix[i+3] == '/' {
		return "", fmt.Errorf("'*' only as the whole last path segment after SCHEME://AUTHORITY/, as in spiffe://example.com/ns/prod/*")
	}
	return u, nil
}

func nonEmpty(s string) (string, error) {
	if s == "" {
		return "", fmt.Errorf("empty value")
	}
	return s, nil
}

// normEmailClause checks an address and lowercases its domain (RFC 5321
// section 2.4: the local part may be case-sensitive, the domain is not).
func normEmailClause(s string) (string, error) {
	at := strings.LastIndexByte(s, '@')
	if at <= 0 || at == len(s)-1 {
		return "", fmt.Errorf("want LOCAL@DOMAIN")
	}
	return normEmail(s), nil
}

func normDomainClause(s string) (string, error) {
	d := lowerASCII(strings.TrimSuffix(s, "."))
	if d == "" || strings.ContainsAny(d, "@/ *") {
		return "", fmt.Errorf("want a domain name such as example.com")
	}
	return d, nil
}

// normSerialClause reads a hex serial (colons allowed, any case, leading
// zeros ignored) into the form of Identity.SerialHex.
func normSerialClause(s string) (string, error) {
	h := strings.TrimPrefix(strings.TrimPrefix(strings.ReplaceAll(s, ":", ""), "0x"), "0X")
	n, ok := new(big.Int).SetString(h, 16)
	if !ok || h == "" || n.Sign() < 0 {
		return "", fmt.Errorf("want a serial in hex, such as 5F3C09")
	}
	return identity.SerialHex(n), nil
}

func normFingerprint(s string) (string, error) {
	h := lowerASCII(strings.ReplaceAll(strings.TrimPrefix(s, "sha256:"), ":", ""))
	if b, err := hex.DecodeString(h); err != nil || len(b) != sha256.Size {
		return "", fmt.Errorf("want the SHA-256 of the CA certificate, 64 hex digits")
	}
	return h, nil
}

// subjectDN is c's subject as Identity.IssuerDN prints it.
func subjectDN(c *x509.Certificate) string {
	dn, err := identity.FormatDN(c.RawSubject)
	if err != nil {
		return ""
	}
	return dn
}

func caNames(cas []*x509.Certificate) string {
	names := make([]string, len(cas))
	for i, c := range cas {
		names[i] = fmt.Sprintf("%q sha256 %s", subjectDN(c), identity.Fingerprint(c))
	}
	return "the bundle has " + strings.Join(names, ", ")
}

package serverconf

import (
	"fmt"
	"slices"
	"strings"

	"minica/identity"
)

// serverVar is how a web server produces one identity field: its variable
// and whether the header must be left out when the variable is empty
// (Apache's mod_headers would send "(null)").
type serverVar struct {
	name     string
	optional bool
}

// serverFields are the fields each web server can produce, under the proxy's
// field names (identity.FieldNames and the apache profile's own forms). What is
// missing a server cannot produce in the proxy's form: SHA-256 fingerprints
// (nginx has SHA-1 only, Apache none), RFC 3339 times (both print OpenSSL's),
// every SAN of a kind, the DER forms of RFC 9440 and Envoy's XFCC. nginx's
// cn and email come from maps over the subject DN (see the template); the
// email there is the subject's emailAddress only.
var serverFields = map[string]map[string]serverVar{
	Nginx: {
		"cn":                 {"$minica_%s_client_cn", false},
		"email":              {"$minica_%s_client_email", false},
		"dn_email":           {"$minica_%s_client_email", false},
		"dn":                 {"$ssl_client_s_dn", false},
		"issuer_dn":          {"$ssl_client_i_dn", false},
		"serial":             {"$ssl_client_serial", false},
		"fingerprint_sha1":   {"$ssl_client_fingerprint", false},
		"verify":             {"$ssl_client_verify", false},
		"cert":               {"$ssl_client_escaped_cert", false},
		identity.FieldVStart: {"$ssl_client_v_start", false},
		identity.FieldVEnd:   {"$ssl_client_v_end", false},
	},
	Apache: {
		"cn":                     {"SSL_CLIENT_S_DN_CN", true},
		"email":                  {"", true}, // two lines, see apacheLines
		"dn_email":               {"SSL_CLIENT_S_DN_Email", true},
		"dn":                     {"SSL_CLIENT_S_DN", false},
		"issuer_dn":              {"SSL_CLIENT_I_DN", false},
		"o":                      {"SSL_CLIENT_S_DN_O", true},
		"ou":                     {"SSL_CLIENT_S_DN_OU", true},
		"serial":                 {"SSL_CLIENT_M_SERIAL", false},
		"verify":                 {"SSL_CLIENT_VERIFY", false},
		identity.FieldVStart:     {"SSL_CLIENT_V_START", false},
		identity.FieldVEnd:       {"SSL_CLIENT_V_END", false},
		identity.FieldApacheCert: {"SSL_CLIENT_CERT", true},
	},
}

var serverTitle = map[string]string{Nginx: "nginx", Apache: "Apache"}

// CannotError is the error of Web for a custom header whose field the
// server cannot produce.
type CannotError struct {
	Server, Header, Field string
}

func (e *CannotError) Error() string {
	return fmt.Sprintf("%s cannot produce the field %q of header %s; it can: %s", e.Server, e.Field, e.Header, strings.Join(ServerFieldNames(e.Server), ", "))
}

// ServerFieldNames lists the fields of identity.FieldNames that server
// produces, sorted.
func ServerFieldNames(server string) []string {
	var out []string
	for _, f := range identity.FieldNames() {
		if _, ok := serverFields[server][f]; ok {
			out = append(out, f)
		}
	}
	return out
}

// headerPlan is which headers a configuration sets and which it leaves out.
type headerPlan struct {
	set     []identity.HeaderField
	omitted []omitted // the profile's headers left out
}

// omitted is a header of the profile that a configuration leaves out, and
// why, as a comment for it.
type omitted struct {
	identity.HeaderField
	Why string
}

// planHeaders splits the headers of f's profile and custom headers into
// those server produces and those it cannot; a custom one it cannot is an
// error (*CannotError). The minica profile forwards no certificate (its
// X-SSL-Client-Cert), so that the configurations of earlier versions stay
// as they were; --header X-SSL-Client-Cert=cert asks for it.
func planHeaders(server string, f *Front) (*headerPlan, error) {
	all, err := identity.HeaderFields(f.HeaderProfile, f.CustomHeaders)
	if err != nil {
		return nil, err
	}
	profile := strings.ToLower(f.HeaderProfile)
	if profile == identity.ProfileXFCC || profile == identity.ProfileRFC9440 {
		return nil, fmt.Errorf("%s cannot render the %s profile: no variable of it has that form", server, profile)
	}
	custom := len(all) - len(f.CustomHeaders)
	p := &headerPlan{}
	for i, h := range all {
		_, ok := serverFields[server][h.Field]
		if i >= custom && !ok {
			return nil, &CannotError{Server: server, Header: h.Name, Field: h.Field}
		}
		if !ok {
			p.omitted = append(p.omitted, omitted{h, fmt.Sprintf("%s cannot produce %s (field %s): left out", serverTitle[server], h.Name, h.Field)})
			continue
		}
		if i < custom && (profile == "" || profile == identity.ProfileMinica) && h.Field == "cert" {
			p.omitted = append(p.omitted, omitted{h, fmt.Sprintf("%s (field cert) is left out; --header %s=cert forwards it", h.Name, h.Name)})
			continue
		}
		p.set = append(p.set, h)
	}
	return p, nil
}

// nginxLines are the proxy_set_header lines of the plan.
func nginxLines(p *headerPlan, ident string) []string {
	width := nameWidth(p.set)
	var out []string
	for _, h := range p.set {
		v := serverFields[Nginx][h.Field].name
		if strings.Contains(v, "%s") {
			v = fmt.Sprintf(v, ident)
		}
		out = append(out, fmt.Sprintf("proxy_set_header %-*s %s;", width, h.Name, v))
	}
	return out
}

// apacheLines are the RequestHeader set lines of the plan.
func apacheLines(p *headerPlan) []string {
	width := nameWidth(p.set)
	var out []string
	line := func(name, v string, optional bool) {
		l := fmt.Sprintf(`RequestHeader set %-*s "%%{%s}s"`, width, name, v)
		if optional {
			l += fmt.Sprintf(` "expr=-n %%{%s}"`, v)
		}
		out = append(out, l)
	}
	for _, h := range p.set {
		sv := serverFields[Apache][h.Field]
		if h.Field == "email" {
			// The first email SAN, else the subject's emailAddress: the
			// later line wins when both are set.
			line(h.Name, "SSL_CLIENT_S_DN_Email", true)
			line(h.Name, "SSL_CLIENT_SAN_Email_0", true)
			continue
		}
		line(h.Name, sv.name, sv.optional)
	}
	return out
}

func nameWidth(hs []identity.HeaderField) int {
	w := 0
	for _, h := range hs {
		w = max(w, len(h.Name))
	}
	return w
}

// unsetNames are the header names a configuration must remove from the
// client's request before it sets its own: the proxy's minica namespace,
// the plan's headers and, for Apache, which passes '_' names on, each in
// both spellings. nginx drops '_' names itself, and its proxy_set_header
// replaces what it sets, so it only clears the '-' spellings of the rest.
func unsetNames(server string, p *headerPlan) ([]string, error) {
	names, err := identityHeaders()
	if err != nil {
		return nil, err
	}
	all := slices.Clone(p.set)
	for _, o := range p.omitted {
		all = append(all, o.HeaderField)
	}
	for _, h := range all {
		if !slices.ContainsFunc(names, func(n string) bool { return strings.EqualFold(n, h.Name) }) {
			names = append(names, h.Name)
		}
	}
	var out []string
	if server == Nginx {
		for _, n := range names {
			// A '_' name cannot come from the client, but its '-'
			// spelling can, and an app may read both the same.
			n = strings.ReplaceAll(n, "_", "-")
			if slices.Contains(out, n) || slices.ContainsFunc(p.set, func(h identity.HeaderField) bool { return strings.EqualFold(h.Name, n) }) {
				continue
			}
			out = append(out, n)
		}
		return out, nil
	}
	for _, n := range names {
		out = append(out, strings.ReplaceAll(n, "_", "-"))
	}
	for _, n := range names {
		out = append(out, strings.ReplaceAll(n, "-", "_"))
	}
	return out, nil
}

// CheckHeaders reports what Web would refuse in a header profile and custom
// headers for server (nginx or Apache): an unknown profile, a malformed
// NAME=FIELD, or a field the server cannot produce (*CannotError).
func CheckHeaders(server, profile string, custom []string) error {
	_, err := planHeaders(server, &Front{HeaderProfile: profile, CustomHeaders: custom})
	return err
}

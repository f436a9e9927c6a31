package identity

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Header profile names, as accepted by NewHeaders.
const (
	ProfileMinica  = "minica"
	ProfileApache  = "apache"
	ProfileNginx   = "nginx"
	ProfileXFCC    = "xfcc"
	ProfileRFC9440 = "rfc9440"
	// ProfileNone sends only the custom headers.
	ProfileNone = "none"
)

// Profiles lists the header profile names in documentation order.
var Profiles = []string{ProfileMinica, ProfileApache, ProfileNginx, ProfileXFCC, ProfileRFC9440, ProfileNone}

// ErrUnknownProfile is returned by NewHeaders for a profile not in Profiles.
var ErrUnknownProfile = errors.New("unknown header profile")

// Header is one identity header: its canonical name and wire-safe value.
type Header struct {
	Name  string
	Value string
}

// field renders one identity field; "" means the header is left out.
type field func(id *Identity) string

type spec struct {
	name  string
	field string // the field it renders, a name of fields or a profile's own form
	value field
}

func timeRFC3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// modSSLTime is OpenSSL's ASN1_TIME_print form, which mod_ssl uses for
// SSL_CLIENT_V_START and SSL_CLIENT_V_END: "Jan  2 03:04:05 2030 GMT".
func modSSLTime(t time.Time) string { return t.UTC().Format("Jan _2 15:04:05 2006") + " GMT" }

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// apachePEM is the PEM with each newline replaced by a space, as Apache's
// mod_headers forwards %{SSL_CLIENT_CERT}s; the final one is dropped.
func apachePEM(id *Identity) string {
	return strings.TrimSuffix(strings.ReplaceAll(id.PEM, "\n", " "), " ")
}

func sfBinary(der []byte) string { return ":" + base64.StdEncoding.EncodeToString(der) + ":" }

// fields are the names accepted in custom NAME=FIELD headers.
var fields = map[string]field{
	"cn":               func(id *Identity) string { return escapeText(id.CN) },
	"email":            func(id *Identity) string { return escapeText(id.Email) },
	"dn_email":         func(id *Identity) string { return escapeText(id.DNEmail) },
	"dn":               func(id *Identity) string { return id.DN },
	"issuer_dn":        func(id *Identity) string { return id.IssuerDN },
	"o":                func(id *Identity) string { return escapeList(id.O, escapeText) },
	"ou":               func(id *Identity) string { return escapeList(id.OU, escapeText) },
	"uri":              func(id *Identity) string { return escapeList(id.URIs, escapeURI) },
	"dns":              func(id *Identity) string { return escapeList(id.DNSNames, escapeText) },
	"serial":           func(id *Identity) string { return id.SerialHex },
	"fingerprint":      func(id *Identity) string { return id.SHA256 },
	"fingerprint_sha1": func(id *Identity) string { return id.SHA1 },
	"not_before":       func(id *Identity) string { return timeRFC3339(id.NotBefore) },
	"not_after":        func(id *Identity) string { return timeRFC3339(id.NotAfter) },
	"cert":             func(id *Identity) string { return escapeComponent(id.PEM) },
	"cert_der":         func(id *Identity) string { return sfBinary(id.Cert.Raw) },
	"verify":           func(id *Identity) string { return id.Verify },
	"days_left":        func(id *Identity) string { return strconv.Itoa(id.DaysLeft) },
}

// FieldNames lists the FIELD names a custom NAME=FIELD header accepts.
func FieldNames() []string {
	names := make([]string, 0, len(fields))
	for n := range fields {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// The fields of the apache profile's headers that render a certificate fact
// in mod_ssl's form rather than a field's: the times as OpenSSL prints them
// ("Jan  2 15:04:05 2030 GMT") and the PEM with its newlines as spaces.
const (
	FieldVStart     = "v_start"
	FieldVEnd       = "v_end"
	FieldApacheCert = "cert_apache"
)

// HeaderField is one identity header a Headers sets: its name, as
// documented or as given in NAME=FIELD, and the field it renders (a name
// of FieldNames, one of the Field constants, or "xfcc" and
// "cert_chain_der", which no single field is).
type HeaderField struct {
	Name  string
	Field string
}

// HeaderFields lists the headers that NewHeaders(profile, custom) sets, in
// its order, with the errors NewHeaders gives. Configurations written for
// other servers use it to set the same headers from the server's own
// variables.
func HeaderFields(profile string, custom []string) ([]HeaderField, error) {
	if _, err := NewHeaders(profile, custom); err != nil {
		return nil, err
	}
	if profile == "" {
		profile = ProfileMinica
	}
	var out []HeaderField
	given := map[string]bool{}
	for _, c := range custom {
		s, _ := parseCustom(c) // checked by NewHeaders
		given[s.name] = true
	}
	for _, s := range profiles[strings.ToLower(profile)] {
		if !given[textproto.CanonicalMIMEHeaderKey(s.name)] {
			out = append(out, HeaderField{Name: s.name, Field: s.field})
		}
	}
	for _, c := range custom {
		name, _, _ := strings.Cut(c, "=")
		s, _ := parseCustom(c)
		out = append(out, HeaderField{Name: strings.TrimSpace(name), Field: s.field})
	}
	return out, nil
}

// ProfileNames returns the names of the headers profile sets, in its order
// and in its documented spelling (X-SSL-Client-CN, where Headers.Names has
// the canonical X-Ssl-Client-Cn), or an error matching ErrUnknownProfile.
// Configurations written for other servers use it to set the same names.
func ProfileNames(profile string) ([]string, error) {
	specs, ok := profiles[profile]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownProfile, profile)
	}
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.name
	}
	return names, nil
}

var profiles = map[string][]spec{
	ProfileMinica: {
		{"X-SSL-Client-CN", "cn", fields["cn"]},
		{"X-SSL-Client-Email", "email", fields["email"]},
		{"X-SSL-Client-DN", "dn", fields["dn"]},
		{"X-SSL-Client-Serial", "serial", fields["serial"]},
		{"X-SSL-Client-Fingerprint", "fingerprint", fields["fingerprint"]},
		{"X-SSL-Client-Not-After", "not_after", fields["not_after"]},
		{"X-SSL-Client-Verify", "verify", fields["verify"]},
		{"X-SSL-Client-Cert", "cert", fields["cert"]},
	},
	ProfileApache: {
		{"X-SSL-Client-S-DN", "dn", fields["dn"]},
		{"X-SSL-Client-S-DN-CN", "cn", func(id *Identity) string { return escapeModSSL(id.CN) }},
		{"X-SSL-Client-S-DN-Email", "dn_email", func(id *Identity) string { return escapeModSSL(id.DNEmail) }},
		{"X-SSL-Client-S-DN-O", "o", func(id *Identity) string { return escapeModSSL(first(id.O)) }},
		{"X-SSL-Client-S-DN-OU", "ou", func(id *Identity) string { return escapeModSSL(first(id.OU)) }},
		{"X-SSL-Client-I-DN", "issuer_dn", fields["issuer_dn"]},
		{"X-SSL-Client-M-Serial", "serial", fields["serial"]},
		{"X-SSL-Client-V-Start", FieldVStart, func(id *Identity) string { return modSSLTime(id.NotBefore) }},
		{"X-SSL-Client-V-End", FieldVEnd, func(id *Identity) string { return modSSLTime(id.NotAfter) }},
		{"X-SSL-Client-Verify", "verify", fields["verify"]},
		{"X-SSL-Client-Cert", FieldApacheCert, apachePEM},
	},
	ProfileNginx: {
		{"X-SSL-Client-S-DN", "dn", fields["dn"]},
		{"X-SSL-Client-Serial", "serial", fields["serial"]},
		{"X-SSL-Client-Fingerprint", "fingerprint_sha1", fields["fingerprint_sha1"]},
		{"X-SSL-Client-Escaped-Cert", "cert", fields["cert"]},
		{"X-SSL-Client-Verify", "verify", fields["verify"]},
	},
	ProfileXFCC: {
		{"X-Forwarded-Client-Cert", "xfcc", xfcc},
	},
	ProfileNone: {},
	ProfileRFC9440: {
		{"Client-Cert", "cert_der", fields["cert_der"]},
		{"Client-Cert-Chain", "cert_chain_der", func(id *Identity) string {
			parts := make([]string, len(id.Chain))
			for i, c := range id.Chain {
				parts[i] = sfBinary(c.Raw)
			}
			return strings.Join(parts, ", ")
		}},
	},
}

// xfcc renders Envoy's x-forwarded-client-cert element for one client:
// Hash, then Cert and Subject always double-quoted (as Envoy does; the DN's
// OpenSSL escaping already puts a backslash before '"' and '\'), then one
// URI= and one DNS= pair per SAN, quoted only when the value holds one of
// , ; = " or a space, with '"' and '\' escaped by a backslash inside quotes.
func xfcc(id *Identity) string {
	var b strings.Builder
	b.WriteString("Hash=")
	b.WriteString(id.SHA256)
	b.WriteString(`;Cert="`)
	b.WriteString(escapeComponent(id.PEM))
	b.WriteString(`";Subject="`)
	b.WriteString(id.DN) // OpenSSL already escapes '"' and '\' in it
	b.WriteString(`"`)
	for _, u := range id.URIs {
		b.WriteString(";URI=")
		b.WriteString(xfccValue(escapeURI(u)))
	}
	for _, d := range id.DNSNames {
		b.WriteString(";DNS=")
		b.WriteString(xfccValue(escapeText(d)))
	}
	return b.String()
}

func xfccValue(v string) string {
	if !strings.ContainsAny(v, `,;=" \`) {
		return v
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
}

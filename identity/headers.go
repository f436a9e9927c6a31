package identity

import (
	"fmt"
	"net/textproto"
	"strings"

	"minica/internal/httptoken"
)

// Headers renders an Identity as HTTP headers: one profile plus custom
// headers. It also knows the identity namespace that inbound requests must
// not carry (see Headers.Namespace). A Headers is immutable and safe for
// concurrent use.
type Headers struct {
	specs []spec
}

// NewHeaders returns the renderer for profile (one of Profiles,
// case-insensitive; "" means ProfileMinica) plus custom headers, each
// "NAME=FIELD" with FIELD one of FieldNames(). A custom header replaces a
// profile header of the same name.
func NewHeaders(profile string, custom []string) (*Headers, error) {
	if profile == "" {
		profile = ProfileMinica
	}
	base, ok := profiles[strings.ToLower(profile)]
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownProfile, profile, strings.Join(Profiles, ", "))
	}
	h := &Headers{specs: make([]spec, 0, len(base)+len(custom))}
	for _, s := range base {
		h.specs = append(h.specs, spec{name: textproto.CanonicalMIMEHeaderKey(s.name), field: s.field, value: s.value})
	}
	seen := map[string]bool{}
	for _, c := range custom {
		s, err := parseCustom(c)
		if err != nil {
			return nil, err
		}
		if seen[s.name] {
			return nil, fmt.Errorf("custom header %q: %s given twice", c, s.name)
		}
		seen[s.name] = true
		h.specs = slicesDeleteName(h.specs, s.name)
		h.specs = append(h.specs, s)
	}
	return h, nil
}

func slicesDeleteName(specs []spec, name string) []spec {
	out := specs[:0]
	for _, s := range specs {
		if s.name != name {
			out = append(out, s)
		}
	}
	return out
}

// hopByHop are header names a custom header may not take: the proxy or the
// HTTP layer own them.
var hopByHop = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Connection": true, "Proxy-Authenticate": true,
	"Proxy-Authorization": true, "Te": true, "Trailer": true, "Transfer-Encoding": true,
	"Upgrade": true, "Host": true, "Content-Length": true,
}

func parseCustom(c string) (spec, error) {
	name, fieldName, ok := strings.Cut(c, "=")
	name, fieldName = strings.TrimSpace(name), strings.ToLower(strings.TrimSpace(fieldName))
	if !ok || name == "" || fieldName == "" {
		return spec{}, fmt.Errorf("custom header %q: want NAME=FIELD", c)
	}
	if !httptoken.Valid(name) {
		return spec{}, fmt.Errorf("custom header %q: invalid header name %q", c, name)
	}
	canon := textproto.CanonicalMIMEHeaderKey(name)
	if hopByHop[canon] {
		return spec{}, fmt.Errorf("custom header %q: %s is reserved for the HTTP layer", c, canon)
	}
	f, ok := fields[fieldName]
	if !ok {
		return spec{}, fmt.Errorf("custom header %q: unknown field %q (known: %s)", c, fieldName, strings.Join(FieldNames(), ", "))
	}
	return spec{name: canon, field: fieldName, value: f}, nil
}

// Render returns the headers for id in a fixed order, leaving out those
// whose value is empty. Every value is wire-safe: a value that somehow is
// not gets the text encoding (see encode.go) rather than reaching the wire.
func (h *Headers) Render(id *Identity) []Header {
	out := make([]Header, 0, len(h.specs))
	for _, s := range h.specs {
		v := s.value(id)
		if v == "" {
			continue
		}
		if !wireSafe(v) {
			v = escapeText(v)
		}
		out = append(out, Header{Name: s.name, Value: v})
	}
	return out
}

// Names returns the canonical names of the headers h may set.
func (h *Headers) Names() []string {
	out := make([]string, len(h.specs))
	for i, s := range h.specs {
		out[i] = s.name
	}
	return out
}

// WireSize is the size of hs on the wire as HTTP/1.1 writes them,
// "Name: value\r\n" each: what the identity headers add to a request.
func WireSize(hs []Header) int {
	n := 0
	for _, h := range hs {
		n += len(h.Name) + len(h.Value) + 4
	}
	return n
}

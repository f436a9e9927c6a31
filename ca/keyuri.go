package ca

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
)

// keyURIFile holds, instead of ca.key, the RFC 7512 URI of a CA key kept in
// a PKCS#11 token: one line, never a PIN.
const keyURIFile = "ca.key-uri"

// ErrPINInURI is returned by ParseKeyURI for a URI that carries a PIN
// (pin-value) or names a PIN file (pin-source): the PIN comes from the
// caller's SecretFunc, so that it is neither in argv nor in the CA
// directory.
var ErrPINInURI = errors.New("a PKCS#11 key URI must not carry a PIN")

// KeyURI is the RFC 7512 URI of a private key in a PKCS#11 token, as minica
// takes it: the module to load (module-path, an absolute path), exactly one
// way to find the token (token label, serial or slot-id) and the key object
// by label (object), CKA_ID (id) or both.
type KeyURI struct {
	ModulePath string
	Token      string // CKA token label
	Serial     string // token serial number
	SlotID     *int
	Object     string // the key's CKA_LABEL
	ID         []byte // the key's CKA_ID
}

// ParseKeyURI parses and checks a pkcs11: URI (RFC 7512). Attribute values
// are percent-decoded; an attribute given twice, an unknown attribute, a
// relative module path and a PIN (pin-value or pin-source, see
// ErrPINInURI) are refused with an error naming the attribute.
func ParseKeyURI(s string) (*KeyURI, error) {
	const scheme = "pkcs11:"
	if len(s) < len(scheme) || !strings.EqualFold(s[:len(scheme)], scheme) {
		return nil, fmt.Errorf("invalid key URI %s: want a PKCS#11 URI (RFC 7512) such as 'pkcs11:token=minica;object=ca?module-path=/usr/lib/softhsm/libsofthsm2.so'", printable(s))
	}
	path, query, _ := strings.Cut(s[len(scheme):], "?")
	u := &KeyURI{}
	seen := map[string]bool{}
	attrs := func(part, sep string) error {
		if part == "" {
			return nil
		}
		for _, attr := range strings.Split(part, sep) {
			name, raw, ok := strings.Cut(attr, "=")
			if !ok || name == "" {
				return fmt.Errorf("invalid key URI: attribute %s: want name=value", printable(attr))
			}
			value, err := url.PathUnescape(raw)
			if err != nil {
				return fmt.Errorf("invalid key URI: attribute %q: bad percent-encoding in %s", name, printable(raw))
			}
			if seen[name] {
				return fmt.Errorf("invalid key URI: attribute %q is given twice", name)
			}
			seen[name] = true
			if err := u.set(name, value); err != nil {
				return err
			}
		}
		return nil
	}
	if err := attrs(path, ";"); err != nil {
		return nil, err
	}
	if err := attrs(query, "&"); err != nil {
		return nil, err
	}
	return u, u.check()
}

// set stores one attribute. RFC 7512 puts the token and object in the path
// and the module and PIN in the query; minica is lenient about the side.
func (u *KeyURI) set(name, value string) error {
	switch name {
	case "module-path":
		u.ModulePath = value
	case "token":
		u.Token = value
	case "serial":
		u.Serial = value
	case "slot-id":
		n, err := strconv.Atoi(value)
		if err != nil || n < 0 {
			return fmt.Errorf("invalid key URI: slot-id %s: want a decimal slot number", printable(value))
		}
		u.SlotID = &n
	case "object":
		u.Object = value
	case "id":
		u.ID = []byte(value)
	case "type":
		if value != "private" {
			return fmt.Errorf("invalid key URI: type %s: the CA key is a private key (type=private)", printable(value))
		}
	case "pin-value", "pin-source":
		return fmt.Errorf("%w (%s)", ErrPINInURI, name)
	default:
		return fmt.Errorf("invalid key URI: unsupported attribute %q: minica knows module-path, token, serial, slot-id, object, id and type", name)
	}
	return nil
}

func (u *KeyURI) check() error {
	switch {
	case u.ModulePath == "":
		return errors.New("invalid key URI: no module-path: name the token's PKCS#11 library, such as ?module-path=/usr/lib/softhsm/libsofthsm2.so")
	case !filepath.IsAbs(u.ModulePath):
		return fmt.Errorf("invalid key URI: module-path %q is not an absolute path", u.ModulePath)
	}
	n := 0
	for _, set := range []bool{u.Token != "", u.Serial != "", u.SlotID != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return errors.New("invalid key URI: name the token by exactly one of token (its label), serial or slot-id")
	}
	if u.Object == "" && len(u.ID) == 0 {
		return errors.New("invalid key URI: name the key by object (its label), id or both")
	}
	return nil
}

// String returns the URI in minica's canonical form: path attributes token,
// serial, slot-id, object and id, then the module path as the query; the
// id fully percent-encoded, as RFC 7512's examples write it.
func (u *KeyURI) String() string {
	var path []string
	add := func(name, value string) { path = append(path, name+"="+escapeURIValue(value)) }
	if u.Token != "" {
		add("token", u.Token)
	}
	if u.Serial != "" {
		add("serial", u.Serial)
	}
	if u.SlotID != nil {
		add("slot-id", strconv.Itoa(*u.SlotID))
	}
	if u.Object != "" {
		add("object", u.Object)
	}
	if len(u.ID) > 0 {
		var b strings.Builder
		for _, c := range u.ID {
			fmt.Fprintf(&b, "%%%02x", c)
		}
		path = append(path, "id="+b.String())
	}
	return "pkcs11:" + strings.Join(path, ";") + "?module-path=" + escapeURIValue(u.ModulePath)
}

// TokenName names the token for messages: its label, serial or slot.
func (u *KeyURI) TokenName() string {
	switch {
	case u.Token != "":
		return fmt.Sprintf("PKCS#11 token %q", u.Token)
	case u.Serial != "":
		return fmt.Sprintf("PKCS#11 token with serial %q", u.Serial)
	case u.SlotID != nil:
		return fmt.Sprintf("PKCS#11 token in slot %d", *u.SlotID)
	}
	return "PKCS#11 token"
}

// ObjectName names the key object for messages: its label and id as given.
func (u *KeyURI) ObjectName() string {
	var parts []string
	if u.Object != "" {
		parts = append(parts, fmt.Sprintf("object %q", u.Object))
	}
	if len(u.ID) > 0 {
		parts = append(parts, "id "+hex.EncodeToString(u.ID))
	}
	return strings.Join(parts, ", ")
}

// escapeURIValue percent-encodes everything but RFC 3986's unreserved
// characters and '/', which module paths are made of.
func escapeURIValue(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~/", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

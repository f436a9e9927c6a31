package recordjson

import (
	"bytes"
	"encoding/json"
	"minica/ca/store"
	"time"
	"unicode/utf8"
)

// Decode decodes one record line, the JSON store.EncodeRecord writes.
// Lines in exactly that form take the hand-written path, without
// encoding/json's reflection, because planning a renewal and listing read
// every record (unless built with the tag stdrecordjson); any other JSON (a record edited by hand, a
// field a newer minica adds) goes through encoding/json. Both give the
// same Record for the same line, and Decode fails exactly where
// encoding/json does. It checks no field's meaning: the engines check
// what they keep the record under.
func Decode(line []byte) (*store.Record, error) {
	if handWritten {
		if r, ok := decodeFast(line); ok {
			return r, nil
		}
	}
	r := new(store.Record)
	if err := json.Unmarshal(line, r); err != nil {
		return nil, err
	}
	return r, nil
}

// recordScanner reads the fields of a record line in store.EncodeRecord's order;
// the first thing it does not expect makes ok false for good.
type recordScanner struct {
	s  []byte
	ok bool
}

// key consumes `,"name":` (`{"name":` for the first field) and reports
// whether it was there; a field that is not leaves s as it was.
func (p *recordScanner) key(sep byte, name string) bool {
	n := len(name)
	if !p.ok || len(p.s) < n+4 || p.s[0] != sep || p.s[1] != '"' ||
		string(p.s[2:2+n]) != name || p.s[2+n] != '"' || p.s[3+n] != ':' {
		return false
	}
	p.s = p.s[n+4:]
	return true
}

// str consumes a string without escapes and returns it; store.EncodeRecord
// escapes only what encoding/json must, so a backslash, a control
// character or bytes that are not UTF-8 send the line to encoding/json.
func (p *recordScanner) str() []byte {
	if !p.ok || len(p.s) == 0 || p.s[0] != '"' {
		p.ok = false
		return nil
	}
	ascii := true
	for i := 1; i < len(p.s); i++ {
		switch c := p.s[i]; {
		case c == '"':
			v := p.s[1:i]
			if !ascii && !utf8.Valid(v) {
				p.ok = false
				return nil
			}
			p.s = p.s[i+1:]
			return v
		case c == '\\' || c < 0x20:
			p.ok = false
			return nil
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	p.ok = false
	return nil
}

// field reads a required string field.
func (p *recordScanner) field(sep byte, name string) []byte {
	if !p.key(sep, name) {
		p.ok = false
		return nil
	}
	return p.str()
}

// optional reads a string field that store.EncodeRecord leaves out when empty.
func (p *recordScanner) optional(name string) string {
	if !p.key(',', name) {
		return ""
	}
	return string(p.str())
}

// time reads a time field; one that omitzero leaves out may be missing.
func (p *recordScanner) time(name string, required bool) time.Time {
	if !p.key(',', name) {
		p.ok = p.ok && !required
		return time.Time{}
	}
	t, ok := ParseUTCTime(p.str())
	p.ok = p.ok && ok
	return t
}

// decodeFast decodes a line in store.EncodeRecord's exact form,
//
//	{"serial":S,"name":S,"profile":S,"status":S[,"subject":S][,"sans":[S,...]]
//	 [,"not_before":T][,"not_after":T][,"sha256":S],"has_key":B,"issued_at":T
//	 [,"revoked_at":T][,"reason":S][,"renewal_of":S][,"renewed_by":S]
//	 [,"acme_account":S][,"device":S]}
//
// followed by at most a newline, and reports false for anything else.
func decodeFast(line []byte) (*store.Record, bool) {
	p := recordScanner{s: bytes.TrimSuffix(line, []byte("\n")), ok: true}
	r := new(store.Record)
	r.Serial = string(p.field('{', "serial"))
	r.Name = string(p.field(',', "name"))
	r.Profile = store.Profile(internWord(p.field(',', "profile")))
	r.Status = store.Status(internWord(p.field(',', "status")))
	r.Subject = p.optional("subject")
	if p.key(',', "sans") {
		r.SANs = p.list()
	}
	r.NotBefore = p.time("not_before", false)
	r.NotAfter = p.time("not_after", false)
	r.Fingerprint = p.optional("sha256")
	if p.key(',', "has_key") {
		switch {
		case bytes.HasPrefix(p.s, []byte("true")):
			r.HasKey, p.s = true, p.s[4:]
		case bytes.HasPrefix(p.s, []byte("false")):
			p.s = p.s[5:]
		default:
			p.ok = false
		}
	} else {
		p.ok = false
	}
	r.IssuedAt = p.time("issued_at", true)
	r.RevokedAt = p.time("revoked_at", false)
	r.Reason = p.optional("reason")
	r.RenewalOf = p.optional("renewal_of")
	r.RenewedBy = p.optional("renewed_by")
	r.ACMEAccount = p.optional("acme_account")
	r.Device = p.optional("device")
	if !p.ok || string(p.s) != "}" {
		return nil, false
	}
	return r, true
}

// list reads a non-empty array of strings (omitempty leaves out an empty one).
func (p *recordScanner) list() []string {
	if !p.ok || len(p.s) == 0 || p.s[0] != '[' {
		p.ok = false
		return nil
	}
	p.s = p.s[1:]
	var l []string
	for p.ok {
		l = append(l, string(p.str()))
		if !p.ok || len(p.s) == 0 {
			break
		}
		c := p.s[0]
		p.s = p.s[1:]
		if c == ']' {
			return l
		}
		if c != ',' {
			break
		}
	}
	p.ok = false
	return nil
}

// internWord returns the constant for the profiles and statuses a
// record holds, so that a million records do not hold a million copies.
func internWord(b []byte) string {
	for _, w := range [...]string{"client", "server", "ocsp",
		string(store.StatusValid), string(store.StatusPending), string(store.StatusRevoked), string(store.StatusVoid)} {
		if string(b) == w {
			return w
		}
	}
	return string(b)
}

// ParseUTCTime parses "YYYY-MM-DDTHH:MM:SS[.F]Z", the form json.Marshal
// gives a UTC time (F: 1 to 9 digits), to the Time encoding/json would
// read; it reports false for any other form and for fields out of range.
func ParseUTCTime(s []byte) (time.Time, bool) {
	if len(s) < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[len(s)-1] != 'Z' {
		return time.Time{}, false
	}
	var f [7]int
	for i, pos := range [6][2]int{{0, 4}, {5, 7}, {8, 10}, {11, 13}, {14, 16}, {17, 19}} {
		for _, c := range s[pos[0]:pos[1]] {
			if c < '0' || c > '9' {
				return time.Time{}, false
			}
			f[i] = 10*f[i] + int(c-'0')
		}
	}
	if frac := s[19 : len(s)-1]; len(frac) > 0 {
		if len(frac) < 2 || len(frac) > 10 || frac[0] != '.' {
			return time.Time{}, false
		}
		for i := 1; i < 10; i++ {
			f[6] *= 10
			if i < len(frac) {
				c := frac[i]
				if c < '0' || c > '9' {
					return time.Time{}, false
				}
				f[6] += int(c - '0')
			}
		}
	}
	t := time.Date(f[0], time.Month(f[1]), f[2], f[3], f[4], f[5], f[6], time.UTC)
	if t.Month() != time.Month(f[1]) || t.Day() != f[2] || t.Hour() != f[3] || t.Minute() != f[4] || t.Second() != f[5] {
		return time.Time{}, false // time.Date normalized it: out of range
	}
	return t, true
}

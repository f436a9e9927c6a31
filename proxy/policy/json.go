package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"
)

// Error is one error of a policy file, at the line and column (both from
// 1; the column counts characters) of the JSON value or key it is about.
type Error struct {
	File      string
	Line, Col int
	Msg       string
	off       int // byte offset, turned into Line and Col by positions
}

// Error is FILE:LINE:COL: MESSAGE, as compilers print it.
func (e *Error) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
}

// Errors are the errors of a policy file, in file order; a syntax error
// ends the list.
type Errors []*Error

// Error is one error per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// jsonReader walks a JSON document token by token, knowing where each token
// starts, so that every error names its line and column. It reads the
// policy's fixed schema itself instead of json.Unmarshal, which gives no
// position for an unknown field or a value that is wrong but well typed.
type jsonReader struct {
	file string
	data []byte
	dec  *json.Decoder
	errs Errors
	// fatal is set by a syntax error: nothing after it can be read.
	fatal bool
}

func newJSONReader(file string, data []byte) *jsonReader {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return &jsonReader{file: file, data: data, dec: dec}
}

// errAt records an error at byte offset off.
func (r *jsonReader) errAt(off int, format string, args ...any) {
	r.errs = append(r.errs, &Error{File: r.file, off: min(off, len(r.data)), Msg: fmt.Sprintf(format, args...)})
}

// positions sorts the errors by offset (stable: errors at one place keep
// their order) and sets their lines and columns, in one pass over the data.
func (r *jsonReader) positions() {
	slices.SortStableFunc(r.errs, func(a, b *Error) int { return a.off - b.off })
	line, col, at := 1, 1, 0
	for _, e := range r.errs {
		for ; at < e.off; at++ {
			if b := r.data[at]; b == '\n' {
				line, col = line+1, 1
			} else if utf8.RuneStart(b) {
				col++
			}
		}
		e.Line, e.Col = line, col
	}
}

// next returns the next token and the offset where it starts; on a syntax
// error it records it, sets fatal and returns ok false.
func (r *jsonReader) next() (tok json.Token, off int, ok bool) {
	if r.fatal {
		return nil, len(r.data), false
	}
	off = r.peek()
	tok, err := r.dec.Token()
	if err != nil {
		r.fatal = true
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			// Offset is, near enough, where the offending byte is.
			r.errAt(int(se.Offset), "invalid JSON: %s", strings.TrimPrefix(se.Error(), "invalid character "))
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			r.errAt(len(r.data), "invalid JSON: unexpected end of file")
		default:
			r.errAt(off, "invalid JSON: %v", err)
		}
		return nil, off, false
	}
	return tok, off, true
}

// peek returns the offset where the next token starts.
func (r *jsonReader) peek() int {
	off := int(r.dec.InputOffset())
	for off < len(r.data) && strings.IndexByte(" \t\r\n:,", r.data[off]) >= 0 {
		off++
	}
	return off
}

// skipRest consumes the rest of a value whose first token was tok.
func (r *jsonReader) skipRest(tok json.Token) {
	d, ok := tok.(json.Delim)
	if !ok || (d != '{' && d != '[') {
		return
	}
	for depth := 1; depth > 0; {
		t, _, ok := r.next()
		if !ok {
			return
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
}

// kind names what a token starts, for type errors.
func kind(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			return "an object"
		}
		return "a list"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return "a value"
}

// object reads an object, calling field for each key with the key's
// offset; field must consume the value. Duplicate keys are errors. It
// reports whether the value was an object.
func (r *jsonReader) object(what string, field func(key string, off int)) bool {
	tok, off, ok := r.next()
	if !ok {
		return false
	}
	if tok != json.Delim('{') {
		r.errAt(off, "%s: want an object, got %s", what, kind(tok))
		r.skipRest(tok)
		return false
	}
	seen := map[string]bool{}
	for {
		tok, off, ok := r.next()
		if !ok {
			return false
		}
		if tok == json.Delim('}') {
			return true
		}
		key := tok.(string) // the decoder only returns string keys here
		if seen[key] {
			r.errAt(off, "%s: %q given twice", what, key)
		}
		seen[key] = true
		field(key, off)
		if r.fatal {
			return false
		}
	}
}

// unknown records an unknown key of what, naming the known ones, and skips
// its value.
func (r *jsonReader) unknown(what, key string, off int, known string) {
	r.errAt(off, "%s: unknown field %q (known: %s)", what, key, known)
	r.skip()
}

// skip consumes one value.
func (r *jsonReader) skip() {
	if tok, _, ok := r.next(); ok {
		r.skipRest(tok)
	}
}

// str reads a string value.
func (r *jsonReader) str(what string) (string, int, bool) {
	tok, off, ok := r.next()
	if !ok {
		return "", off, false
	}
	s, isStr := tok.(string)
	if !isStr {
		r.errAt(off, "%s: want a string, got %s", what, kind(tok))
		r.skipRest(tok)
		return "", off, false
	}
	return s, off, true
}

// posString is a string of the file and the offset where it starts.
type posString struct {
	s   string
	off int
}

// strings reads a non-empty list of strings.
func (r *jsonReader) strings(what string) ([]posString, int, bool) {
	tok, off, ok := r.next()
	if !ok {
		return nil, off, false
	}
	if tok != json.Delim('[') {
		r.errAt(off, "%s: want a list of strings, got %s", what, kind(tok))
		r.skipRest(tok)
		return nil, off, false
	}
	var out []posString
	good := true
	for {
		tok, voff, ok := r.next()
		if !ok {
			return nil, off, false
		}
		if tok == json.Delim(']') {
			break
		}
		s, isStr := tok.(string)
		if !isStr {
			r.errAt(voff, "%s: want a list of strings, got %s in it", what, kind(tok))
			r.skipRest(tok)
			good = false
			continue
		}
		out = append(out, posString{s, voff})
	}
	if good && len(out) == 0 {
		r.errAt(off, "%s: empty list (leave the field out instead)", what)
		return nil, off, false
	}
	return out, off, good
}

// boolean reads true or false.
func (r *jsonReader) boolean(what string) (bool, int, bool) {
	tok, off, ok := r.next()
	if !ok {
		return false, off, false
	}
	b, isBool := tok.(bool)
	if !isBool {
		r.errAt(off, "%s: want true or false, got %s", what, kind(tok))
		r.skipRest(tok)
		return false, off, false
	}
	return b, off, true
}

// integer reads a whole number from lo to hi.
func (r *jsonReader) integer(what string, lo, hi int64) (int64, int, bool) {
	tok, off, ok := r.next()
	if !ok {
		return 0, off, false
	}
	n, isNum := tok.(json.Number)
	if !isNum {
		r.errAt(off, "%s: want a whole number, got %s", what, kind(tok))
		r.skipRest(tok)
		return 0, off, false
	}
	v, err := n.Int64()
	if err != nil || v < lo || v > hi {
		r.errAt(off, "%s: want a whole number from %d to %d, got %s", what, lo, hi, n)
		return 0, off, false
	}
	return v, off, true
}

// end checks that nothing but white space follows the document.
func (r *jsonReader) end() {
	if r.fatal {
		return
	}
	if tok, off, ok := r.next(); ok {
		r.errAt(off, "invalid JSON: %s after the end of the policy", kind(tok))
	} else if len(r.errs) > 0 && r.errs[len(r.errs)-1].Msg == "invalid JSON: unexpected end of file" && r.errs[len(r.errs)-1].off == len(r.data) {
		r.errs = r.errs[:len(r.errs)-1] // io.EOF here is the end we want
	}
}

package formats

import (
	"bytes"
	"fmt"
	"unicode/utf8"
)

var magics = []struct {
	prefix string
	name   string
}{
	{"\x1f\x8b", "gzip data"},
	{"PK\x03\x04", "a zip archive"},
	{"ssh-", "an OpenSSH public key"},
	{"ecdsa-sha2-", "an OpenSSH public key"},
	{"{", "JSON or other text starting with '{'"},
	{"%PDF", "a PDF document"},
}

// sniff names what data looks like, for "unknown format" errors: a known
// file type, base64 without its PEM armor, text, or binary bytes in hex.
func sniff(data []byte) string {
	for _, m := range magics {
		if bytes.HasPrefix(data, []byte(m.prefix)) {
			return m.name
		}
	}
	head := data
	if len(head) > 64 {
		head = head[:64]
	}
	if !isText(head) {
		if len(head) > 8 {
			head = head[:8]
		}
		return fmt.Sprintf("binary data starting with % x", head)
	}
	if isBase64(bytes.TrimSpace(data)) {
		return "base64 text without PEM armor (are the BEGIN and END lines missing?)"
	}
	line, _, _ := bytes.Cut(bytes.TrimSpace(head), []byte("\n"))
	if len(line) > 24 {
		line = append(line[:24:24], "..."...)
	}
	return fmt.Sprintf("text starting with %q", line)
}

func isText(b []byte) bool {
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			// A multi-byte rune cut by the 64-byte window is still text.
			return len(b) < utf8.UTFMax && utf8.RuneStart(b[0])
		}
		if r < 0x20 && r != '\n' && r != '\r' && r != '\t' {
			return false
		}
		b = b[size:]
	}
	return true
}

func isBase64(b []byte) bool {
	if len(b) < 16 {
		return false
	}
	for _, c := range b {
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9',
			c == '+', c == '/', c == '=', c == '\n', c == '\r':
		default:
			return false
		}
	}
	return true
}

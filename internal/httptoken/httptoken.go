package httptoken

import "strings"

// Valid reports whether s is a token: one or more visible ASCII characters
// other than the delimiters DQUOTE and "(),/:;<=>?@[\]{}".
func Valid(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !tokenByte[s[i]] {
			return false
		}
	}
	return true
}

// tokenByte says which bytes a token may hold (RFC 9110's tchar).
var tokenByte = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			strings.IndexByte("!#$%&'*+-.^_`|~", byte(c)) >= 0
	}
	return t
}()

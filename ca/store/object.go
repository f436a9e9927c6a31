package store

// IsObjectKind reports whether s may be an Object's Kind: 1 to 32
// lowercase letters or '-', not starting with '-'.
func IsObjectKind(s string) bool {
	if len(s) == 0 || len(s) > 32 || s[0] == '-' {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < 'a' || c > 'z') && c != '-' {
			return false
		}
	}
	return true
}

// IsObjectID reports whether s may be an Object's ID: 1 to 128 ASCII
// letters, digits, '-', '_' or '.', not starting with '.' or '-' (a file
// name in the file engine, a key in PostgreSQL).
func IsObjectID(s string) bool {
	if len(s) == 0 || len(s) > 128 || s[0] == '.' || s[0] == '-' {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

// IsNonce reports whether s may be a nonce: 16 to 64 characters of
// base64url without padding.
func IsNonce(s string) bool {
	if len(s) < 16 || len(s) > 64 {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

package validate

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
)

// DNS01 validates a dns-01 challenge (RFC 8555 section 8.4) of a dns
// identifier: one TXT record of _acme-challenge.NAME (NAME without the
// "*." of a wildcard) must be the unpadded base64url SHA-256 of
// keyAuthorization. It returns nil when valid, else an *Error.
func (v *Validator) DNS01(ctx context.Context, id Identifier, keyAuthorization string) error {
	if id.Type != "dns" {
		return rejected("dns-01 validates dns identifiers only (RFC 8738 section 7), not %s %q", id.Type, id.Value)
	}
	name := strings.TrimPrefix(id.Value, "*.")
	if err := checkName(name); err != nil {
		return err
	}
	ctx, cancel := v.bound(ctx)
	defer cancel()
	fqdn := "_acme-challenge." + name + "."
	txts, err := v.resolver.LookupTXT(ctx, fqdn)
	if err != nil {
		return v.failure(ctx, TypeDNS, "looking up TXT", err)
	}
	want := txtValue(keyAuthorization)
	if slices.Contains(txts, want) {
		return nil
	}
	return &Error{Type: TypeIncorrectResponse,
		Detail: fmt.Sprintf("TXT records of %s are %q; want one %q", fqdn, clipAll(txts), want)}
}

// txtValue is the TXT record of dns-01 for keyAuthorization.
func txtValue(keyAuthorization string) string {
	sum := sha256.Sum256([]byte(keyAuthorization))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// clipAll is the first few of ss, each clipped, for an error.
func clipAll(ss []string) []string {
	const n = 5
	out := make([]string, 0, n+1)
	for i, s := range ss {
		if i == n {
			out = append(out, fmt.Sprintf("and %d more", len(ss)-n))
			break
		}
		out = append(out, clip([]byte(s)))
	}
	return out
}

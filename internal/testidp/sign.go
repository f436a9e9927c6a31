package testidp

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"sync"

	jose "github.com/go-jose/go-jose/v4"
)

// SignIDToken returns claims as a compact JWS signed with the provider's
// current key (RS256, with that key's kid), as its ID tokens are. Nothing is
// added to claims or checked: build tokens for another audience, expired
// ones and the like. If claims do not encode as JSON it fails the test and
// returns "".
func (p *Provider) SignIDToken(claims map[string]any) string {
	k := p.store.current()
	token, err := sign(k, claims)
	if err != nil {
		p.t.Errorf("testidp: signing an ID token: %v", err)
		return ""
	}
	return token
}

// foreignKey is a key that no provider ever publishes.
var foreignKey = sync.OnceValues(newSigningKey)

// SignForeign returns claims as a compact JWS signed like an ID token but
// with a key no provider ever published (RS256, its own kid): a forgery.
// It panics if claims do not encode as JSON, a mistake of the calling test.
func SignForeign(claims map[string]any) string {
	k, err := foreignKey()
	if err == nil {
		var token string
		if token, err = sign(k, claims); err == nil {
			return token
		}
	}
	panic(fmt.Sprintf("testidp: signing a forged ID token: %v", err))
}

func sign(k *signingKey, claims map[string]any) (string, error) {
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("encoding the claims: %w", err)
	}
	signer, err := jose.NewSigner(
		jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: k.key, KeyID: k.id}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return "", fmt.Errorf("making a signer: %w", err)
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		return "", fmt.Errorf("signing: %w", err)
	}
	return jws.CompactSerialize()
}

// DecodeClaims returns the claims of an RS256 compact JWS such as an ID
// token, WITHOUT verifying its signature: for tests that change a real
// token's claims and sign it again.
func DecodeClaims(token string) (map[string]any, error) {
	jws, err := jose.ParseSignedCompact(token, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		return nil, fmt.Errorf("parsing the token: %w", err)
	}
	var claims map[string]any
	if err := json.Unmarshal(jws.UnsafePayloadWithoutVerification(), &claims); err != nil {
		return nil, fmt.Errorf("decoding the token's claims: %w", err)
	}
	return claims, nil
}

// rewriteIDToken serves r with h and answers with f applied to the
// id_token of the response; other responses pass unchanged.
func rewriteIDToken(w http.ResponseWriter, r *http.Request, h http.Handler, f func(string) string) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	body := rec.Body.Bytes()
	if rec.Code == http.StatusOK {
		body = replaceIDToken(body, f)
	}
	maps.Copy(w.Header(), rec.Header())
	w.Header().Del("Content-Length")
	w.WriteHeader(rec.Code)
	w.Write(body)
}

// replaceIDToken returns the JSON object body with its id_token replaced by
// f(id_token), other members unchanged; body itself if it has none.
func replaceIDToken(body []byte, f func(string) string) []byte {
	var members map[string]json.RawMessage
	var token string
	if json.Unmarshal(body, &members) != nil || json.Unmarshal(members["id_token"], &token) != nil {
		return body
	}
	replaced, err := json.Marshal(f(token))
	if err != nil {
		return body
	}
	members["id_token"] = replaced
	out, err := json.Marshal(members)
	if err != nil {
		return body
	}
	return out
}

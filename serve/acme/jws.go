package acme

import (
	"bytes"
	"crypto"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"

	jose "github.com/go-jose/go-jose/v4"

	"minica/ca"
)

// JOSEType is the media type of every POST (RFC 8555 section 6.2).
const JOSEType = "application/jose+json"

// signatureAlgs are the JWS algorithms an account key may sign with:
// never "none" nor an HMAC, which go-jose then refuses at parse time.
var signatureAlgs = []jose.SignatureAlgorithm{jose.ES256, jose.ES384, jose.RS256, jose.EdDSA}

// macAlgs are the algorithms of an external account binding's MAC.
var macAlgs = []jose.SignatureAlgorithm{jose.HS256, jose.HS384, jose.HS512}

// keyWant says which key a request must name.
type keyWant int

const (
	wantKID keyWant = iota // an account's URL, "kid"
	wantJWK                // the key itself, "jwk" (newAccount)
	wantAny                // either (revokeCert)
)

// request is a POST whose JWS was verified: its payload, and the key
// that signed it with the account it belongs to (nil for a jwk request
// whose key has none).
type request struct {
	payload []byte
	jwk     *jose.JSONWebKey
	acct    *account
	url     string
	// sig is the flattened JWS, for newAccount's binding and keyChange's
	// inner JWS.
	sig *jose.JSONWebSignature
}

// postAsGet reports whether the request is a POST-as-GET (empty payload).
func (r *request) postAsGet() bool { return len(r.payload) == 0 }

// flattened is a JWS in the flattened JSON serialization, the only one
// ACME takes: no unprotected header, one signature.
type flattened struct {
	Protected  string          `json:"protected"`
	Payload    *string         `json:"payload"` // "" for POST-as-GET
	Signature  string          `json:"signature"`
	Header     json.RawMessage `json:"header"`
	Signatures json.RawMessage `json:"signatures"`
}

// readJWS reads the body of a POST, at most maxBody bytes, and parses
// it as a flattened JWS signed with one of algs.
func readJWS(w http.ResponseWriter, r *http.Request, maxBody int64, algs []jose.SignatureAlgorithm) (*jose.JSONWebSignature, error) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		return nil, prob(http.StatusMethodNotAllowed, ErrMalformed, "this resource is POST only (RFC 8555 section 6.3: POST-as-GET)")
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != JOSEType {
		return nil, prob(http.StatusUnsupportedMediaType, ErrMalformed, "the body must be %s, not %q", JOSEType, r.Header.Get("Content-Type"))
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, prob(http.StatusRequestEntityTooLarge, ErrMalformed, "the request is larger than %d bytes", maxBody)
		}
		return nil, malformed("reading the request: %v", err)
	}
	return parseFlattened(body, algs)
}

// parseFlattened parses data as a flattened JWS signed with one of algs.
// Its three members are handed to go-jose in the compact serialization,
// which holds the same (RFC 7515 section 7.2.2): data was decoded once
// already, to refuse what ACME does not take, and go-jose's own JSON
// decoding of it was a tenth of a request's work.
func parseFlattened(data []byte, algs []jose.SignatureAlgorithm) (*jose.JSONWebSignature, error) {
	var f flattened
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, malformed("the body is not a JWS in the flattened JSON serialization: %v", err)
	}
	switch {
	case f.Signatures != nil:
		return nil, malformed("a JWS must have one signature, in the flattened JSON serialization")
	case f.Header != nil:
		return nil, malformed("a JWS must have no unprotected header")
	case f.Protected == "":
		return nil, malformed("a JWS needs a protected header")
	case f.Payload == nil:
		return nil, malformed("a JWS needs a payload (empty for POST-as-GET)")
	}
	// go-jose reads padded base64url in JSON and not in the compact form:
	// the padding goes, as it reads it.
	compact := strings.Join([]string{
		strings.TrimRight(f.Protected, "="), strings.TrimRight(*f.Payload, "="), strings.TrimRight(f.Signature, "="),
	}, ".")
	jws, err := jose.ParseSignedCompact(compact, algs)
	if err != nil {
		var alg *jose.ErrUnexpectedSignatureAlgorithm
		if errors.As(err, &alg) {
			p := prob(http.StatusBadRequest, ErrBadSignatureAlgorithm, "the JWS algorithm %q is not one this server takes", alg.Got)
			for _, a := range algs {
				p.Algorithms = append(p.Algorithms, string(a))
			}
			return nil, p
		}
		return nil, malformed("parsing the JWS: %v", err)
	}
	if len(jws.Signatures) != 1 {
		return nil, malformed("a JWS must have exactly one signature")
	}
	return jws, nil
}

// headerURL returns the "url" of a protected header.
func headerURL(h jose.Header) string {
	u, _ := h.ExtraHeaders["url"].(string)
	return u
}

// verify checks a POST as RFC 8555 section 6 asks: a flattened JWS with
// a taken algorithm, the request's own URL in "url", "jwk" or "kid" as
// want says (a kid naming a valid account of this server), a signature
// that holds, and a fresh nonce, used up by this request.
func (s *Server) verify(w http.ResponseWriter, r *http.Request, want keyWant) (*request, error) {
	jws, err := readJWS(w, r, s.cfg.MaxBody, signatureAlgs)
	if err != nil {
		return nil, err
	}
	h := jws.Signatures[0].Protected
	url := s.url(r, r.URL.Path)
	if got := headerURL(h); got != url {
		return nil, unauthorized("the JWS header's url is %q, not this request's %q", got, url)
	}
	req := &request{url: url, sig: jws}
	switch {
	case h.JSONWebKey != nil && h.KeyID != "":
		return nil, malformed("a JWS header must have jwk or kid, not both")
	case h.JSONWebKey != nil:
		if want == wantKID {
			return nil, malformed("this request must name its account with kid, not carry jwk")
		}
		if err := checkJWK(h.JSONWebKey); err != nil {
			return nil, err
		}
		req.jwk = h.JSONWebKey
	case h.KeyID != "":
		if want == wantJWK {
			return nil, malformed("this request must carry its key as jwk, not name an account with kid")
		}
		acct, err := s.accountOfKID(r, h.KeyID)
		if err != nil {
			return nil, err
		}
		req.acct, req.jwk = acct, acct.jwk
	default:
		return nil, malformed("a JWS header must have jwk or kid")
	}
	payload, err := jws.Verify(req.jwk)
	if err != nil {
		return nil, malformed("the JWS signature does not verify: %v", err)
	}
	req.payload = payload
	if err := s.useNonce(h.Nonce); err != nil {
		return nil, err
	}
	if req.jwk != nil && req.acct == nil && h.JSONWebKey != nil {
		if req.acct, err = s.accountOfJWK(req.jwk); err != nil {
			return nil, err
		}
	}
	return req, nil
}

// checkJWK refuses a key that is not a public key strong enough for an
// account (ca.CheckPublicKey: RSA of 2048 bits or more, P-256, P-384,
// Ed25519).
func checkJWK(k *jose.JSONWebKey) error {
	if !k.Valid() || !k.IsPublic() {
		return prob(http.StatusBadRequest, ErrBadPublicKey, "the jwk is not a valid public key")
	}
	if err := ca.CheckPublicKey(k.Key); err != nil {
		return prob(http.StatusBadRequest, ErrBadPublicKey, "the account key: %v", err)
	}
	return nil
}

// thumbprint is the base64url SHA-256 JWK thumbprint (RFC 7638).
func thumbprint(k *jose.JSONWebKey) (string, error) {
	sum, err := k.Thumbprint(crypto.SHA256)
	if err != nil {
		return "", malformed("the jwk: %v", err)
	}
	return b64(sum), nil
}

// accountOfKID returns the valid account that kid names: the URL of an
// account of this server.
func (s *Server) accountOfKID(r *http.Request, kid string) (*account, error) {
	id, ok := strings.CutPrefix(kid, s.url(r, accountPath))
	if !ok || strings.Contains(id, "/") {
		return nil, prob(http.StatusBadRequest, ErrAccountDoesNotExist, "kid %q is not an account URL of this server", kid)
	}
	acct, err := s.obj.account(id)
	var p *problem
	if errors.As(err, &p) && p.Status == http.StatusNotFound {
		return nil, prob(http.StatusBadRequest, ErrAccountDoesNotExist, "no account %q", kid)
	}
	if err != nil {
		return nil, err
	}
	if acct.Status != statusValid {
		return nil, unauthorized("the account is %s", acct.Status)
	}
	return acct, nil
}

// accountOfJWK returns the account of a key, or nil.
func (s *Server) accountOfJWK(k *jose.JSONWebKey) (*account, error) {
	thumb, err := thumbprint(k)
	if err != nil {
		return nil, err
	}
	id, err := s.obj.accountOfKey(thumb)
	if err != nil || id == "" {
		return nil, err
	}
	return s.obj.account(id)
}

// sameKey reports whether two JWKs are the same key.
func sameKey(a, b *jose.JSONWebKey) bool {
	ta, err1 := thumbprint(a)
	tb, err2 := thumbprint(b)
	return err1 == nil && err2 == nil && ta == tb
}

// decodePayload decodes a JSON payload into v, strictly: unknown fields
// are allowed (RFC 8555 extensions), a payload that is not one JSON
// object is not.
func decodePayload(payload []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(payload))
	if err := dec.Decode(v); err != nil {
		return malformed("the payload is not the JSON object expected: %v", err)
	}
	if dec.More() {
		return malformed("the payload has data after its JSON object")
	}
	return nil
}

package acme

import (
	"bytes"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"

	"minica/ca"
	"minica/ca/store"
)

// rawPost is a hand-made ACME POST, for the requests a well-behaved
// client never sends.
type rawPost struct {
	key     crypto.Signer
	alg     jose.SignatureAlgorithm // ES256 unless set
	kid     string                  // the account URL; "" embeds the jwk
	url     string                  // the request's URL unless set
	nonce   string                  // a fresh one unless set
	payload []byte
	// body, when set, is sent as it is instead of the JWS.
	body []byte
}

// nonce gets a fresh nonce from the server at base.
func (h *harness) nonce(t *testing.T, base string) string {
	t.Helper()
	resp, err := h.ts.Client().Head(base + noncePath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	n := resp.Header.Get("Replay-Nonce")
	if n == "" {
		t.Fatalf("HEAD %s: no Replay-Nonce", noncePath)
	}
	return n
}

// sign makes the flattened JWS of p for url.
func (h *harness) sign(t *testing.T, p rawPost, url string) []byte {
	t.Helper()
	if p.alg == "" {
		p.alg = jose.ES256
	}
	opts := &jose.SignerOptions{EmbedJWK: p.kid == ""}
	opts.WithHeader("url", url)
	opts.WithHeader("nonce", p.nonce)
	sk := jose.SigningKey{Algorithm: p.alg, Key: jose.JSONWebKey{Key: p.key, KeyID: p.kid}}
	if p.kid == "" {
		sk.Key = p.key
	}
	signer, err := jose.NewSigner(sk, opts)
	if err != nil {
		t.Fatal(err)
	}
	jws, err := signer.Sign(p.payload)
	if err != nil {
		t.Fatal(err)
	}
	out := []byte(jws.FullSerialize())
	if len(p.payload) == 0 { // POST-as-GET: go-jose leaves the empty payload out
		var m map[string]any
		json.Unmarshal(out, &m)
		m["payload"] = ""
		out, _ = json.Marshal(m)
	}
	return out
}

// post sends p to path on the harness's server and returns the status
// and the problem type (without the namespace), if any.
func (h *harness) post(t *testing.T, path string, p rawPost) (int, string, []byte) {
	t.Helper()
	st, typ, body, _ := h.postH(t, path, p)
	return st, typ, body
}

// postH is post that also returns the answer's header.
func (h *harness) postH(t *testing.T, path string, p rawPost) (int, string, []byte, http.Header) {
	t.Helper()
	resp, data := h.postResponse(t, path, p)
	var pr struct{ Type string }
	if strings.HasPrefix(resp.Header.Get("Content-Type"), ProblemType) {
		json.Unmarshal(data, &pr)
	}
	return resp.StatusCode, strings.TrimPrefix(pr.Type, errNS), data, resp.Header
}

// postResponse sends p to path and returns the response, its body read.
func (h *harness) postResponse(t *testing.T, path string, p rawPost) (*http.Response, []byte) {
	t.Helper()
	url := h.ts.URL + path
	if p.url == "" {
		p.url = url
	}
	if p.nonce == "" {
		p.nonce = h.nonce(t, h.ts.URL)
	}
	body := p.body
	if body == nil {
		body = h.sign(t, p, p.url)
	}
	resp, err := h.ts.Client().Post(url, JOSEType, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, data
}

// account registers a new account with key through the binding b and
// returns its URL.
func (h *harness) account(t *testing.T, key crypto.Signer, b *ca.ACMEBinding) string {
	t.Helper()
	cl := h.client(t)
	cl.Key = key
	acct, err := h.register(t, cl, b)
	if err != nil {
		t.Fatal(err)
	}
	return acct.URI
}

// TestJWSRefusals sends every malformed request of RFC 8555 section 6
// and checks that each is refused with the type a client acts on, and
// that none creates anything.
func TestJWSRefusals(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	b := h.binding(t, "web", ca.ACMEPolicy{DNSNames: []string{"localhost"}, MaxAccounts: 2})
	key, other := newKey(t), newKey(t)
	kid := h.account(t, key, b)
	otherKID := h.account(t, other, b)
	order := []byte(`{"identifiers":[{"type":"dns","value":"localhost"}]}`)
	used := h.nonce(t, h.ts.URL)
	if st, typ, body := h.post(t, newOrderPath, rawPost{key: key, kid: kid, nonce: used, payload: order}); st != http.StatusCreated {
		t.Fatalf("a good newOrder = %d %s %s", st, typ, body)
	}
	ed := mustEd25519(t)
	cases := []struct {
		name   string
		path   string
		p      rawPost
		status int
		typ    string
	}{
		{"replayed nonce", newOrderPath, rawPost{key: key, kid: kid, nonce: used, payload: order}, 400, ErrBadNonce},
		{"unknown nonce", newOrderPath, rawPost{key: key, kid: kid, nonce: "AAAAAAAAAAAAAAAAAAAAAA", payload: order}, 400, ErrBadNonce},
		{"url of another resource", newOrderPath, rawPost{key: key, kid: kid, url: h.ts.URL + newAcctPath, payload: order}, 403, ErrUnauthorized},
		{"jwk where kid is required", newOrderPath, rawPost{key: key, payload: order}, 400, ErrMalformed},
		{"kid where jwk is required", newAcctPath, rawPost{key: key, kid: kid, payload: []byte(`{}`)}, 400, ErrMalformed},
		{"kid of another account", newOrderPath, rawPost{key: key, kid: otherKID, payload: order}, 400, ErrMalformed},
		{"unknown kid", newOrderPath, rawPost{key: key, kid: h.ts.URL + accountPath + "nobody", payload: order}, 400, ErrAccountDoesNotExist},
		{"kid of another server", newOrderPath, rawPost{key: key, kid: "https://elsewhere.example" + accountPath + "x", payload: order}, 400, ErrAccountDoesNotExist},
		{"another account reads my account", strings.TrimPrefix(kid, h.ts.URL), rawPost{key: other, kid: otherKID}, 403, ErrUnauthorized},
		{"EdDSA is taken", newAcctPath, rawPost{key: ed, alg: jose.EdDSA, payload: []byte(`{"onlyReturnExisting":true}`)}, 400, ErrAccountDoesNotExist},
		{"1 MiB payload", newOrderPath, rawPost{key: key, kid: kid, payload: bytes.Repeat([]byte("a"), 1<<20)}, 413, ErrMalformed},
		{"not JSON", newOrderPath, rawPost{body: []byte("hello")}, 400, ErrMalformed},
		{"alg none", newOrderPath, rawPost{body: noneJWS(kid, h.ts.URL+newOrderPath, order)}, 400, ErrBadSignatureAlgorithm},
		{"HMAC as the account's signature", newOrderPath, rawPost{body: hmacJWS(t, kid, h.ts.URL+newOrderPath, order)}, 400, ErrBadSignatureAlgorithm},
		{"general serialization", newOrderPath, rawPost{body: []byte(`{"payload":"","signatures":[]}`)}, 400, ErrMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, typ, body := h.post(t, tc.path, tc.p)
			if st != tc.status || typ != tc.typ {
				t.Errorf("%s = %d %s; want %d %s\n%s", tc.name, st, typ, tc.status, tc.typ, body)
			}
		})
	}
	// A bad signature: the JWS of one key with the jwk of another.
	bad := h.sign(t, rawPost{key: key, nonce: h.nonce(t, h.ts.URL), payload: []byte(`{}`)}, h.ts.URL+newAcctPath)
	var f map[string]string
	json.Unmarshal(bad, &f)
	sig, _ := base64.RawURLEncoding.DecodeString(f["signature"])
	sig[0] ^= 1
	f["signature"] = base64.RawURLEncoding.EncodeToString(sig)
	bad, _ = json.Marshal(f)
	if st, typ, _ := h.post(t, newAcctPath, rawPost{body: bad}); st != 400 || typ != ErrMalformed {
		t.Errorf("a bad signature = %d %s; want 400 malformed", st, typ)
	}
	// The members as a flattened JWS may hold them: without a payload
	// it is refused; base64url padded with '=' is read, as go-jose reads it.
	edited := func(p rawPost, path string, edit func(map[string]string)) []byte {
		var m map[string]string
		json.Unmarshal(h.sign(t, p, h.ts.URL+path), &m)
		edit(m)
		out, _ := json.Marshal(m)
		return out
	}
	noPayload := edited(rawPost{key: key, kid: kid, nonce: h.nonce(t, h.ts.URL), payload: order}, newOrderPath,
		func(m map[string]string) { delete(m, "payload") })
	if st, typ, _ := h.post(t, newOrderPath, rawPost{body: noPayload}); st != 400 || typ != ErrMalformed {
		t.Errorf("a JWS without a payload = %d %s; want 400 malformed", st, typ)
	}
	acctPath := strings.TrimPrefix(kid, h.ts.URL)
	padded := edited(rawPost{key: key, kid: kid, nonce: h.nonce(t, h.ts.URL)}, acctPath, func(m map[string]string) {
		for k, v := range m {
			m[k] = v + strings.Repeat("=", (4-len(v)%4)%4)
		}
	})
	if st, typ, body := h.post(t, acctPath, rawPost{body: padded}); st != 200 {
		t.Errorf("a JWS in padded base64url = %d %s; want 200\n%s", st, typ, body)
	}
	if n := countObjects(t, h, kindOrder); n != 1 {
		t.Errorf("the store holds %d orders; want only the good one", n)
	}
}

// noneJWS is a JWS with alg "none".
func noneJWS(kid, url string, payload []byte) []byte {
	prot, _ := json.Marshal(map[string]string{"alg": "none", "kid": kid, "url": url, "nonce": "AAAAAAAAAAAAAAAAAAAAAA"})
	out, _ := json.Marshal(map[string]string{"protected": b64(prot), "payload": b64(payload), "signature": ""})
	return out
}

// hmacJWS is a JWS MACed with HS256, as an account's signature.
func hmacJWS(t *testing.T, kid, url string, payload []byte) []byte {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithHeader("url", url).WithHeader("kid", kid).WithHeader("nonce", "AAAAAAAAAAAAAAAAAAAAAA")
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: bytes.Repeat([]byte{1}, 32)}, opts)
	if err != nil {
		t.Fatal(err)
	}
	jws, err := s.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	return []byte(jws.FullSerialize())
}

func countObjects(t *testing.T, h *harness, kind string) int {
	t.Helper()
	n := 0
	for _, err := range h.f.CA.ACMEStore().Objects(kind) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

func mustEd25519(t *testing.T) crypto.Signer {
	t.Helper()
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestNoncesInTurn: the server numbers the nonces it hands out
// (store.NewNonce), so that the file engine's table takes a nonce's slot
// again only after NonceSerials later ones.
func TestNoncesInTurn(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	prev := store.NonceSerial(h.nonce(t, h.ts.URL))
	for range 5 {
		n := store.NonceSerial(h.nonce(t, h.ts.URL))
		if n != (prev+1)%store.NonceSerials {
			t.Errorf("a nonce of serial %d after one of %d; want the next", n, prev)
		}
		prev = n
	}
}

package testidp_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"minica/internal/testidp"
)

// The relying party of these tests is built from the libraries serve/signin
// uses: coreos/go-oidc and golang.org/x/oauth2.
const (
	clientID = "minica"
	secret   = "client-secret"
	redirect = "http://127.0.0.1:8443/signin/callback"
	timeout  = 10 * time.Second // of every request a test makes
)

var (
	simon = testidp.User{Username: "simon", Password: "simon-pw", Email: "simon@example.com",
		EmailVerified: true, Name: "Simon Example", Groups: []string{"staff", "pki-admins"}}
	una = testidp.User{Username: "una", Password: "una-pw", Email: "una@example.com", Name: "Una Example"}
)

func start(t *testing.T) *testidp.Provider { return startFor(t, redirect) }

// startFor starts a provider whose client returns to callback.
func startFor(t *testing.T, callback string) *testidp.Provider {
	return testidp.Start(t, testidp.Config{
		Users:   []testidp.User{simon, una},
		Clients: []testidp.Client{{ID: clientID, Secret: secret, RedirectURIs: []string{callback}}},
	})
}

// rp is a relying party of p.
type rp struct {
	ctx      context.Context // carries its HTTP client to go-oidc and oauth2
	client   *http.Client
	provider *oidc.Provider
	conf     oauth2.Config
	verifier *oidc.IDTokenVerifier
}

func newRP(t *testing.T, p *testidp.Provider) *rp { return newRPFor(t, p, redirect) }

// newRPFor makes a relying party of p that returns to callback.
func newRPFor(t *testing.T, p *testidp.Provider, callback string) *rp {
	t.Helper()
	client := &http.Client{Timeout: timeout}
	ctx := oidc.ClientContext(t.Context(), client)
	provider, err := oidc.NewProvider(ctx, p.Issuer())
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	return &rp{
		ctx: ctx, client: client, provider: provider,
		conf: oauth2.Config{ClientID: clientID, ClientSecret: secret, Endpoint: provider.Endpoint(),
			RedirectURL: callback, Scopes: []string{oidc.ScopeOpenID, "email", "profile"}},
		verifier: provider.Verifier(&oidc.Config{ClientID: clientID}),
	}
}

// attempt is one sign-in: what the relying party keeps, and the code.
type attempt struct {
	state, nonce, pkce string
	code               string
}

// begin starts an attempt: its secrets and the URL to send the browser to.
func (r *rp) begin() (attempt, string) {
	a := attempt{state: oauth2.GenerateVerifier(), nonce: oauth2.GenerateVerifier(), pkce: oauth2.GenerateVerifier()}
	return a, r.conf.AuthCodeURL(a.state, oidc.Nonce(a.nonce), oauth2.S256ChallengeOption(a.pkce))
}

// authorize signs user in at p and returns the attempt with its code,
// checking that the state comes back.
func (r *rp) authorize(t *testing.T, p *testidp.Provider, user testidp.User) attempt {
	t.Helper()
	a, authURL := r.begin()
	back, err := p.Login(r.client, authURL, user.Username, user.Password)
	if err != nil {
		t.Fatalf("Login(%s): %v", user.Username, err)
	}
	return r.returned(t, a, back)
}

// returned checks that back is the redirect URI with a's state, and gives a
// the code.
func (r *rp) returned(t *testing.T, a attempt, back *url.URL) attempt {
	t.Helper()
	if got := back.Scheme + "://" + back.Host + back.Path; got != r.conf.RedirectURL {
		t.Fatalf("redirected back to %s; want %s", got, r.conf.RedirectURL)
	}
	if got := back.Query().Get("state"); got != a.state {
		t.Fatalf("state = %q; want %q", got, a.state)
	}
	a.code = back.Query().Get("code")
	if a.code == "" {
		t.Fatalf("no code in %s", back)
	}
	return a
}

// exchange redeems a's code with its PKCE verifier.
func (r *rp) exchange(a attempt) (*oauth2.Token, error) {
	return r.conf.Exchange(r.ctx, a.code, oauth2.VerifierOption(a.pkce))
}

// signIn is the whole flow: it returns the raw ID token and what go-oidc
// verified of it, nonce included.
func (r *rp) signIn(t *testing.T, p *testidp.Provider, user testidp.User) (string, *oidc.IDToken) {
	t.Helper()
	return r.finish(t, r.authorize(t, p, user))
}

// finish redeems a's code and verifies the ID token, nonce included.
func (r *rp) finish(t *testing.T, a attempt) (string, *oidc.IDToken) {
	t.Helper()
	tok, err := r.exchange(a)
	if err != nil {
		t.Fatalf("exchanging the code: %v", err)
	}
	raw, _ := tok.Extra("id_token").(string)
	idt, err := r.verifier.Verify(r.ctx, raw)
	if err != nil {
		t.Fatalf("verifying the ID token: %v", err)
	}
	if idt.Nonce != a.nonce {
		t.Fatalf("nonce = %q; want %q", idt.Nonce, a.nonce)
	}
	return raw, idt
}

type claims struct {
	Email         string   `json:"email"`
	EmailVerified *bool    `json:"email_verified"`
	Name          string   `json:"name"`
	Groups        []string `json:"groups"`
}

func TestSignInCarriesTheUsersClaims(t *testing.T) {
	p := start(t)
	r := newRP(t, p)
	for _, u := range []testidp.User{simon, una} {
		t.Run(u.Username, func(t *testing.T) {
			before := time.Now()
			_, idt := r.signIn(t, p, u)
			if idt.Issuer != p.Issuer() || idt.Subject != u.Username || !slices.Equal(idt.Audience, []string{clientID}) {
				t.Errorf("iss, sub, aud = %q, %q, %q; want %q, %q, [%q]", idt.Issuer, idt.Subject, idt.Audience, p.Issuer(), u.Username, clientID)
			}
			if !idt.Expiry.After(before) || idt.Expiry.After(before.Add(2*time.Hour)) {
				t.Errorf("exp = %v; want within two hours after %v", idt.Expiry, before)
			}
			var c claims
			if err := idt.Claims(&c); err != nil {
				t.Fatal(err)
			}
			if c.EmailVerified == nil {
				t.Fatalf("email_verified absent; want %v", u.EmailVerified)
			}
			if c.Email != u.Email || *c.EmailVerified != u.EmailVerified || c.Name != u.Name || !slices.Equal(c.Groups, u.Groups) {
				t.Errorf("claims = %q %v %q %q; want %q %v %q %q", c.Email, *c.EmailVerified, c.Name, c.Groups, u.Email, u.EmailVerified, u.Name, u.Groups)
			}
			var all map[string]any
			if err := idt.Claims(&all); err != nil {
				t.Fatal(err)
			}
			if _, ok := all["groups"]; ok != (len(u.Groups) > 0) {
				t.Errorf("groups claim present = %v; want %v", ok, len(u.Groups) > 0)
			}
		})
	}
}

func TestUserinfoAnswersTheSameClaims(t *testing.T) {
	p := start(t)
	r := newRP(t, p)
	tok, err := r.exchange(r.authorize(t, p, una))
	if err != nil {
		t.Fatal(err)
	}
	info, err := r.provider.UserInfo(r.ctx, oauth2.StaticTokenSource(tok))
	if err != nil {
		t.Fatalf("userinfo: %v", err)
	}
	var c claims
	if err := info.Claims(&c); err != nil {
		t.Fatal(err)
	}
	if info.Subject != una.Username || c.Email != una.Email || c.EmailVerified == nil || *c.EmailVerified || c.Name != una.Name {
		t.Errorf("userinfo = %q %q %v %q; want %q %q false %q", info.Subject, c.Email, c.EmailVerified, c.Name, una.Username, una.Email, una.Name)
	}
}

func TestIssuerIsExactlyWhatDiscoverySays(t *testing.T) {
	p := start(t)
	if !strings.HasPrefix(p.Issuer(), "http://localhost:") || strings.HasSuffix(p.Issuer(), "/") {
		t.Fatalf("Issuer() = %q; want http://localhost:PORT without a trailing slash", p.Issuer())
	}
	client := &http.Client{Timeout: timeout}
	resp, err := client.Get(p.Issuer() + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct{ Issuer string }
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if doc.Issuer != p.Issuer() {
		t.Errorf("discovery issuer = %q; want %q", doc.Issuer, p.Issuer())
	}
	// One character more, and go-oidc refuses the provider.
	_, err = oidc.NewProvider(oidc.ClientContext(t.Context(), client), p.Issuer()+"/")
	if err == nil || !strings.Contains(err.Error(), "did not match the issuer URL returned by provider") {
		t.Errorf("discovery under %q/: error = %v; want the issuer mismatch", p.Issuer(), err)
	}
}

func TestLoginFormHasStableIDs(t *testing.T) {
	p := start(t)
	r := newRP(t, p)
	resp, err := r.client.Get(r.conf.AuthCodeURL("state"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Request.URL.Path != "/login/username" {
		t.Fatalf("authorization led to %s; want the login page", resp.Request.URL)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	page := string(body)
	for _, want := range []string{
		`<form id="login" method="post"`, `<input id="username" name="username"`,
		`<input id="password" name="password" type="password"`, `<button id="submit" type="submit">`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("login page lacks %s:\n%s", want, page)
		}
	}
	if strings.Contains(page, `id="error"`) {
		t.Errorf("login page shows an error before any attempt:\n%s", page)
	}
}

func TestLoginRefusals(t *testing.T) {
	p := start(t)
	r := newRP(t, p)
	good := r.conf.AuthCodeURL("state")
	tests := []struct {
		name, authURL, username, password, wantErr string
	}{
		{"wrong password", good, "simon", "guess", `the provider refused the sign-in of "simon": username or password wrong`},
		{"unknown user", good, "mallory", "simon-pw", `the provider refused the sign-in of "mallory": username or password wrong`},
		{"not the provider", strings.Replace(good, "localhost", "127.0.0.1", 1), "simon", "simon-pw", "is not at the provider"},
		{"unknown client", strings.Replace(good, "client_id="+clientID, "client_id=nobody", 1), "simon", "simon-pw", "the provider answered 400 Bad Request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			back, err := p.Login(r.client, tt.authURL, tt.username, tt.password)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Login() = %v, %v; want error containing %q", back, err, tt.wantErr)
			}
		})
	}
}

func TestClientAuthentication(t *testing.T) {
	p := start(t)
	r := newRP(t, p)
	r.conf.Endpoint.AuthStyle = oauth2.AuthStyleInParams // client_secret_post
	r.signIn(t, p, simon)
	r.conf.ClientSecret = "guess"
	_, err := r.exchange(r.authorize(t, p, simon))
	wantOAuthError(t, err, "invalid_client")
	// zitadel's stock storage has a service user of its own; not this one.
	stock := clientcredentials.Config{ClientID: "sid1", ClientSecret: "verysecret", TokenURL: r.conf.Endpoint.TokenURL}
	_, err = stock.Token(r.ctx)
	wantOAuthError(t, err, "invalid_client")
}

func TestCodeIsRedeemedOnce(t *testing.T) {
	p := start(t)
	r := newRP(t, p)
	a := r.authorize(t, p, simon)
	if _, err := r.exchange(a); err != nil {
		t.Fatal(err)
	}
	_, err := r.exchange(a)
	wantOAuthError(t, err, "invalid_grant")
}

func TestPKCEVerifierIsChecked(t *testing.T) {
	p := start(t)
	r := newRP(t, p)
	tests := []struct {
		name     string
		opts     []oauth2.AuthCodeOption
		wantCode string
	}{
		{"missing", nil, "invalid_request"},
		{"wrong", []oauth2.AuthCodeOption{oauth2.VerifierOption(oauth2.GenerateVerifier())}, "invalid_grant"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := r.authorize(t, p, simon)
			_, err := r.conf.Exchange(r.ctx, a.code, tt.opts...)
			wantOAuthError(t, err, tt.wantCode)
		})
	}
}

func wantOAuthError(t *testing.T, err error, code string) {
	t.Helper()
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.ErrorCode != code {
		t.Fatalf("token endpoint error = %v; want the provider's %s", err, code)
	}
}

func TestRotatedKeysArePickedUp(t *testing.T) {
	p := start(t)
	r := newRP(t, p)
	first, _ := r.signIn(t, p, simon) // r's key set now holds the first key
	p.RotateKeys()
	second, _ := r.signIn(t, p, simon) // verified with the key go-oidc fetched anew
	if kid(t, first) == kid(t, second) {
		t.Fatalf("both tokens signed by key %q; want a new key after RotateKeys", kid(t, first))
	}
	fresh := newRP(t, p) // a key set that never saw the first key
	if _, err := fresh.verifier.Verify(fresh.ctx, first); err != nil {
		t.Errorf("token of the previous key: %v; want it still verifiable", err)
	}
	p.RotateKeys()
	fresh = newRP(t, p)
	if _, err := fresh.verifier.Verify(fresh.ctx, first); err == nil || !strings.Contains(err.Error(), "failed to verify signature") {
		t.Errorf("token of a key two rotations old: %v; want a signature failure", err)
	}
	if _, err := fresh.verifier.Verify(fresh.ctx, second); err != nil {
		t.Errorf("token of the previous key: %v; want it still verifiable", err)
	}
}

func kid(t *testing.T, token string) string {
	t.Helper()
	jws, err := jose.ParseSignedCompact(token, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil || jws.Signatures[0].Header.KeyID == "" {
		t.Fatalf("reading the kid of %s: %v", token, err)
	}
	return jws.Signatures[0].Header.KeyID
}

func TestSignedTokens(t *testing.T) {
	p := start(t)
	r := newRP(t, p)
	now := time.Now()
	valid := func() map[string]any {
		return map[string]any{"iss": p.Issuer(), "sub": "simon", "aud": clientID,
			"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "email": "simon@example.com"}
	}
	with := func(k string, v any) map[string]any { c := valid(); c[k] = v; return c }
	tests := []struct {
		name, token, wantErr string
	}{
		{"valid", p.SignIDToken(valid()), ""},
		{"another audience", p.SignIDToken(with("aud", "other-app")), "expected audience"},
		{"another issuer", p.SignIDToken(with("iss", "http://localhost:1")), "id token issued by a different provider"},
		{"expired", p.SignIDToken(with("exp", now.Add(-time.Minute).Unix())), "token is expired"},
		{"forged", testidp.SignForeign(valid()), "failed to verify signature"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := r.verifier.Verify(r.ctx, tt.token)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Verify() error = %v; want %q", err, tt.wantErr)
			}
		})
	}
	got, err := testidp.DecodeClaims(tests[0].token)
	if err != nil || got["sub"] != "simon" || got["email"] != "simon@example.com" {
		t.Errorf("DecodeClaims() = %v, %v; want the signed claims", got, err)
	}
}

func TestRewriteIDTokens(t *testing.T) {
	p := start(t)
	r := newRP(t, p)
	p.RewriteIDTokens(func(token string) string {
		c, err := testidp.DecodeClaims(token)
		if err != nil {
			t.Errorf("DecodeClaims(the provider's token): %v", err)
			return token
		}
		delete(c, "email_verified")
		c["aud"] = "other-app"
		return p.SignIDToken(c)
	})
	tok, err := r.exchange(r.authorize(t, p, simon))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if _, err := r.verifier.Verify(r.ctx, raw); err == nil || !strings.Contains(err.Error(), "expected audience") {
		t.Errorf("rewritten token: %v; want the audience refused", err)
	}
	c, err := testidp.DecodeClaims(raw)
	if _, ok := c["email_verified"]; err != nil || ok || c["nonce"] == nil || tok.AccessToken == "" {
		t.Errorf("rewritten response: claims %v (%v), access token %q; want no email_verified, the nonce, an access token", c, err, tok.AccessToken)
	}
	p.RewriteIDTokens(nil)
	r.signIn(t, p, simon) // verifies again
}

func TestSetDown(t *testing.T) {
	p := start(t)
	r := newRP(t, p)
	a := r.authorize(t, p, simon)
	p.SetDown(true)
	client := &http.Client{Timeout: timeout}
	if _, err := oidc.NewProvider(oidc.ClientContext(t.Context(), client), p.Issuer()); err == nil {
		t.Error("discovery of a provider that is down succeeded")
	}
	if _, err := r.exchange(a); err == nil {
		t.Error("code exchange with a provider that is down succeeded")
	}
	if _, err := p.Login(client, r.conf.AuthCodeURL("state"), "simon", "simon-pw"); err == nil {
		t.Error("login at a provider that is down succeeded")
	}
	p.SetDown(false)
	if _, err := r.exchange(a); err != nil {
		t.Errorf("code exchange once the provider is back: %v", err)
	}
}

func TestSetDelay(t *testing.T) {
	p := start(t)
	discovery := p.Issuer() + "/.well-known/openid-configuration"
	p.SetDelay(time.Minute)
	impatient := &http.Client{Timeout: 100 * time.Millisecond}
	_, err := impatient.Get(discovery)
	var ue *url.Error
	if !errors.As(err, &ue) || !ue.Timeout() {
		t.Errorf("GET with a 100ms timeout from a provider delayed a minute: %v; want a timeout", err)
	}
	const d = 50 * time.Millisecond
	p.SetDelay(d)
	began := time.Now()
	resp, err := (&http.Client{Timeout: timeout}).Get(discovery)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if waited := time.Since(began); resp.StatusCode != http.StatusOK || waited < d {
		t.Errorf("delayed GET: %s after %v; want 200 OK after at least %v", resp.Status, waited, d)
	}
}

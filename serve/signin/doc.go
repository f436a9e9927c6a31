// Package signin lets people get their own client certificates by
// signing in with the company's OpenID Connect provider: [Handler] is the
// http.Handler of GET / (the start page) and /signin/..., which serve
// mounts on its HTTPS listener beside enrollment links (serve/enroll).
//
// # Flow
//
// GET /signin/login sends the browser to the provider (authorization
// code flow with PKCE S256, a state and a nonce, through
// golang.org/x/oauth2); the state, nonce and verifier are kept in the
// store with a hash of a cookie that binds the sign-in to this browser
// (ca.PutSigninLogin), so that the callback may reach any replica.
// GET /signin/callback spends the state once (ca.TakeSigninLogin),
// redeems the code with the verifier, and has coreos/go-oidc check the ID
// token (signature against the provider's published keys, refetched when
// it rotates them; issuer; audience; expiry); the nonce is compared here,
// and the email must be vouched for (email_verified true; a missing claim
// is false). [Mapping] then decides who the person is on a certificate,
// or refuses them with a page that says why and whom to ask.
//
// A session is a random cookie (__Host-, Secure, HttpOnly, SameSite=Lax)
// whose hash finds a short-lived record in the store (ca.SigninSession):
// it grants nothing but the person's own pages. GET /signin/devices ("My
// certificates") lists their devices; its forms (a CSRF token bound to
// the session, and a same-origin check) add a device or renew one, which
// makes a short-lived enrollment link for them and sends the browser to
// it (/enroll/TOKEN, whose page makes the key and the bundle), and revoke
// one, through ca's revocation, publishing a CRL.
//
// # Bounds
//
// Requests are limited per source address and in total; form bodies are
// bounded; every call to the provider has a connect and a total timeout,
// and its answers a size limit. A provider that is down at serve's start
// is discovered at the first sign-in that finds it up (at most one try
// every few seconds); meanwhile people get a page that says so.
//
// See docs/sign-in.md for the set-up, the mapping and the security model.
package signin

// Package testidp runs a real OpenID Connect provider inside a test process,
// so that minica's sign-in is proved against the protocol as a company's
// identity provider speaks it, not against a mock (issue 33, points 6 and 7).
// It is a test helper: only tests import it.
//
// The provider is zitadel/oidc's (github.com/zitadel/oidc/v3): its op
// package serves discovery, authorization, token, userinfo and JWKS, and the
// in-memory storage of its example server keeps auth requests, codes and
// tokens. This package adds what the stock example cannot do: the users and
// clients of a [Config], the claims below in the ID token, signing keys that
// rotate, a login form with stable element ids, and switches that make the
// provider fail. The example's server setup (package exampleop) is not
// used: it exits the process on error, logs every request, and its login
// form's button has no id.
//
// # Sites and the issuer
//
// [Start] listens on 127.0.0.1 with a port chosen by the kernel and names
// itself http://localhost:PORT (no trailing slash): the application under
// test runs under 127.0.0.1, so the two are different sites, as a company's
// provider and minica are. [Provider.Issuer] is exactly what discovery
// says. zitadel's op refuses an http issuer unless told otherwise; it is told
// so here, and the issuer is always the loopback name localhost.
//
// # Claims
//
// The ID token (and the userinfo endpoint) of a [User] carries:
//
//	sub             the username
//	email           with scope "email", when the user has one
//	email_verified  with scope "email", when the user has an email: true or
//	                false, always present (zitadel's stock storage leaves a
//	                false one out)
//	name            with scope "profile", when the user has one
//	groups          whenever the user has groups, as a JSON array
//
// The userinfo endpoint answers as if scopes openid, email and profile had
// been granted. To test a token without email_verified, or any other shape,
// rewrite it with [Provider.RewriteIDTokens], [DecodeClaims] and
// [Provider.SignIDToken].
//
// # The login form
//
// The authorization endpoint sends the browser to /login/username, a plain
// HTML form (POST, no script) with these stable element ids:
//
//	login     the form
//	username  the text input for the username
//	password  the password input
//	submit    the submit button
//	error     a paragraph present only after a refused attempt, saying why
//
// [Provider.Login] fills the same form over HTTP for tests without a browser.
//
// # Keys
//
// Tokens are signed with RS256 by a 2048-bit RSA key. [Provider.RotateKeys]
// makes a new current key and keeps exactly one previous key in the JWKS, so
// tokens signed before one rotation still verify and tokens signed before
// two rotations do not. [SignForeign] signs with a key the provider never
// published.
//
// # Failures
//
// [Provider.SetDown] makes every endpoint close the connection without an
// answer, as a provider that crashed; [Provider.SetDelay] makes every answer
// wait, bounded by the request's context and by the end of the test.
package testidp

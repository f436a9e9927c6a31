// Package acme is serve's ACME server (RFC 8555), with renewal
// information (RFC 9773): the http.Handler of /acme/... on serve's HTTPS
// listener (`minica serve --acme`), so that any ACME client (certbot,
// lego, Caddy, cert-manager...) gets certificates from the CA.
//
// A [Server] checks every POST as section 6 of RFC 8555 asks, through
// go-jose: a flattened JWS signed with ES256, ES384, RS256 or EdDSA
// (never "none" or an HMAC), no larger than Config.MaxBody, the request's
// own URL in its protected header, "jwk" or "kid" as the resource
// requires, and a fresh nonce, which the request uses up. Every refusal is
// an RFC 7807 problem document whose type is the ACME error a client acts
// on (the Err* constants).
//
// Who may get what is package ca's: an account is made with an external
// account binding (ca.CA.BindACMEAccount) unless Config.NoEAB, and its
// orders are judged by the binding's policy and the CA's name constraints
// (ca.CA.CheckACMEIdentifiers), counted against its rate limits
// (ca.CA.CountACMEOrder, under the CA lock), and finalized by
// ca.CA.IssueACME, which records the certificate like any other, naming
// the account. Challenges (http-01, tls-alpn-01, dns-01) are checked by
// the Validator (package validate), within the request that asks for
// them.
//
// All state (nonces, accounts, orders, authorizations) is in the CA's
// store (ca.CA.ACMEStore), so that several Servers of one CA, serve
// replicas on PostgreSQL, answer any step of a client's; what must not
// race between them is done under the CA lock. Accounts are written
// durably; an order's progress is written atomically without a sync
// (store.Object.Volatile), as a client redoes what a crash loses.
package acme

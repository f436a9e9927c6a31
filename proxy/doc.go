// Package proxy is minica's mTLS reverse proxy as a library: it accepts TLS
// connections, lets through only clients holding a valid, unrevoked client
// certificate of the CA, and forwards their requests to one upstream with
// headers that tell the upstream who the client is.
//
// The caller owns the listener and the sources of the files: [Config] takes
// loader functions for the CA bundle, the CRL and the server certificate,
// and a [CRLParser] (revoke.ParseCRL in minica). [New] loads them and fails
// on any bad input; [Proxy.Reload] reloads them, keeping the last good state
// of any part that fails; [Proxy.Serve] serves a listener; [Proxy.Shutdown]
// drains it.
//
// # Verification
//
// TLS 1.2 and 1.3 only, AEAD cipher suites only, no renegotiation, HTTP/2
// and HTTP/1.1 by ALPN. A client certificate is required. Each handshake
// is verified against the current CA bundle and CRL and the Config clock
// (for a resumed session too). Go's verifier checks the chain to a CA of
// the bundle, the validity period and that the EKU does not exclude
// clientAuth; then tls.Config.VerifyConnection checks what Go does not:
// that clientAuth is present (a certificate without EKU, which Go's
// verifier accepts, is refused, as is one with serverAuth only), that it is
// not a CA certificate (basicConstraints CA:TRUE, whatever its EKU), that the
// client's issuer is the CA whose CRL is loaded (one CRL cannot revoke
// another CA's clients), that the CRL is within nextUpdate (plus
// CRLGrace), and that the serial is not revoked. A resumed session whose
// chain no longer verifies against the current bundle, or whose
// certificate is no longer valid, gets a full handshake instead.
//
// The certificate request names the CAs of the bundle: a client that picks
// its certificate by those names (Go's, browsers) sends none when its
// certificate is from another CA.
//
// A refused handshake ends with the matching alert: unknown_ca for an
// issuer not in the bundle, certificate_expired for a certificate expired
// or not yet valid, bad_certificate for the rest (wrong or missing EKU, a
// CA certificate, other CA than the CRL's, CRL expired, revoked), and, when
// no certificate
// was sent, certificate_required in TLS 1.3 and handshake_failure in
// TLS 1.2. With Config.Refusal RefusalPage the handshake passes instead, the
// same checks run when the connection starts (see refusal.go), and every
// request of a refused client gets a page that says why (HTML for
// browsers, else text), with a status of its reason (496, 495, 403, 503)
// and the reason in the X-Minica-Refusal header; none reaches the upstream.
//
// When a reload changes the CA bundle or the CRL, every open connection is
// verified again on its next request; a client revoked since its handshake
// gets 403 "client certificate revoked", and one whose certificate expired
// since gets 403 "client certificate expired". While the CRL is past nextUpdate
// (beyond CRLGrace) every request gets 503 "revocation list expired", every
// handshake is refused, and HealthHandler answers 503. The policy (the
// routes of Config.PolicyFile, or the one route of Upstream and the
// allow-lists) decides per request, after these checks: 403 "client not
// allowed" from the rule of the request's route (see Policy and Decision).
//
// An exchange that outlives the check of its request (a WebSocket or other
// upgraded tunnel, a streaming response or request body) is checked again
// after every Reload, changed files or not, and when its client's
// certificate or the CRL (beyond CRLGrace) ends, by a timer of Serve on the
// Config clock: when its client is refused, it is closed, the upstream side
// by cancelling the request and the client side by closing the client's
// connection (over HTTP/2, with every stream on it). Each closed exchange
// is logged and counted. So is an idle connection (HTTP/1.1 keep-alive
// between requests, HTTP/2 without open streams) of a client refused for a
// reason of its own (revoked, expired, no longer chaining to the bundle):
// it is closed at once, and the client's next request needs
// a new handshake, which is refused. While the CRL itself is unusable
// (expired, not yet valid) idle connections stay open: their requests get
// 503 with the reason, and work again once a fresh CRL is loaded.
//
// # CRL from a URL
//
// LoadCRL may return what a caller fetched from a URL (minica uses package
// crlsource): such a CRL goes through the same checks as a file, by Reload,
// which the caller calls as soon as a new CRL arrives. [ReloadFailure] and
// [CRLRefusalReason] tell it whether the CRL was taken and why not;
// [Proxy.CRLFetchFailed] and [Proxy.CRLFetched] log and count its fetches.
//
// A new CRL is refused (the old one stays) if it does not verify against a
// CA of the bundle, if its number is lower than the current one of the same
// issuer, or if its thisUpdate is more than a minute in the future. A new CA
// bundle that no longer holds the issuer of the CRL in use is refused too,
// unless a CRL of the new bundle comes with it: clients are never checked
// against a CRL of another CA.
//
// # Headers
//
// Before the request goes upstream, in ReverseProxy.Rewrite or in the
// direct way, which follows it (so after the hop-by-hop
// headers and those named in the client's Connection header are removed,
// and before the proxy sets its own), every inbound header of the
// identity namespace is deleted, comparing names case-insensitively with '_'
// read as '-': X-SSL-Client-*, Client-Cert*, X-Forwarded-*, Forwarded, and
// every name of every profile and custom header. The proxy then sets the
// headers of its profile (see [Profiles], [FieldNames]) and X-Forwarded-For,
// X-Forwarded-Proto and X-Forwarded-Host. The Host header is passed through.
//
// Header values never hold a control character or a raw non-ASCII byte; the
// encodings are listed in encode.go and in docs/proxy.md.
//
// # Limits
//
// Every limit has a default (the Default constants): the TLS handshake must
// end within HandshakeTimeout, request headers arrive within
// ReadHeaderTimeout (a slowloris connection is closed), idle keep-alive
// connections close after IdleTimeout. Inbound headers beyond MaxHeaderBytes
// get 431; so do requests whose headers plus the identity headers would
// exceed UpstreamHeaderBytes. Over HTTP/2 the server advertises
// MaxHeaderBytes plus 320 bytes as SETTINGS_MAX_HEADER_LIST_SIZE (Go's
// allowance for HPACK's 32-byte per-field overhead): a client that honours
// it refuses to send more, and one that does not gets 431. An unreachable
// upstream gives 502, a timeout 504; a client gone before the upstream
// answered is logged as 499 client-closed (ReasonClientClosed), not as an
// upstream error. No request is ever forwarded without its identity
// headers.
//
// Clients without a valid certificate cannot take the slots of those with
// one: a connection in its TLS handshake holds one of MaxHandshakes
// slots. Once half of them are taken, a new connection from a source (an
// IPv4 address or IPv6 /64) with MaxHandshakesPerSource in progress is
// closed at once (a TCP reset); when all are taken, a new connection
// closes the oldest handshake that has sent nothing, else the oldest. Only a connection
// whose handshake succeeded counts against MaxConns; while MaxConns are
// open, new connections wait in the listen backlog. In RefusalPage mode a
// connection without a certificate that verified holds its slot only
// until another needs it: a new connection takes the slot of the oldest
// such one, which is closed (connections-shed reason conn-limit).
//
// A request body gets BodyTimeout to send more, and every BodyMinRate
// bytes earn it a second more, up to BodyTimeout ahead (the time the
// upstream takes to read does not count): one that stalls, or trickles,
// gets 408 "request body too slow" and its upstream request is cancelled.
// Each write to a client (a TLS record, at most 16 KiB) must be taken
// within WriteTimeout of its start, else the connection is reset; a
// waiting write goes on only when the system reports the socket writable
// again, not when the few KiB a client's kernel takes after its reader
// stopped fit. Over HTTP/2 the stream is reset when a write does not get
// through the client's flow-control window in time. The request is
// logged with the reason write-timeout.
//
// # Forwarding
//
// Requests go upstream through httputil.ReverseProxy and net/http's
// Transport, but for one without a body or Upgrade to a plain http
// upstream: that one takes the direct way of package
// proxy/internal/h1direct, a twin of theirs with the same semantics for
// less CPU. Config.StandardForwarding sends every request the standard
// way.
//
// # Log format
//
// One line per event, written to Config.Log:
//
//	TIME EVENT key=value ...
//
// TIME is RFC 3339 UTC with milliseconds. A value that is not a plain token
// is a Go double-quoted string with non-ASCII escaped. Empty values are left
// out. With Config.LogFormat LogJSON, each line is one JSON object of
// printable ASCII instead: "time", "event" and the keys below; a request
// has route, cn, serial, fingerprint, days_left (with a certificate),
// decision, reason, method, path, proto, status, bytes and latency
// (seconds), always present. The events:
//
//	request            remote cn serial method uri proto status reason latency
//	handshake-refused  remote reason cn serial error
//	reload             crl_number
//	reload-failed      file (ca, crl, cert, policy) error
//	policy-reload      file routes                   (a changed policy file took effect)
//	exchange-closed    remote cn serial method uri proto reason
//	idle-closed        remote cn serial reason       (an idle connection of a refused client)
//	crl-fetch-failed   reason error                  (a fetch of the CRL URL; the last good CRL stays)
//	crl-grace-warning  msg next_update grace_until   (at most once a minute)
//	crl-expired-error  msg next_update               (at most once a minute)
//	http-error         msg                           (net/http's own messages)
//	accept-error       error                         (retried after a backoff)
//	connections-shed   reason remote                 (at most once a minute per reason)
//
// The reasons of a refusal are the Reason constants: no-certificate,
// unknown-ca, expired, not-yet-valid, wrong-eku, no-eku, ca-certificate,
// no-crl-for-issuer, revoked, crl-expired, crl-not-yet-valid, not-allowed,
// bad-chain, handshake-timeout, tls-error; the policy's too-few-days-left,
// no-route, misdirected and bad-path (see Decision); a request refused for its size
// has header-too-large or upstream-header-budget, one whose body came too
// slowly body-timeout, one whose client did not take its response in time
// write-timeout. Those of the certificate checks are revoke's reasons:
// revoke.Judge decides them, for the proxy and for `minica verify` alike.
// The request line of a closed exchange, logged when it ends, carries the
// reason it was closed for. Connections closed for a handshake limit
// (connections-shed) have source-limit or handshake-limit, and in
// RefusalPage mode conn-limit (see Limits). A failed CRL
// fetch has the reasons of crlsource (connect, tls, timeout, http-status,
// too-large, body, cache) or, for a CRL that was fetched but refused, the
// ReasonCRL constants (malformed, bad-signature, wrong-issuer, incomplete,
// older-number, future-this-update, refused).
package proxy

// Package proxy is minica's mTLS reverse proxy as a library: it accepts TLS
// connections, lets through only clients holding a valid, unrevoked client
// certificate of the CA, and forwards their requests to an upstream with
// headers that say who the client is.
//
// This is the contract with the code that embeds it (cmd/minica). How to
// run the proxy, what each check and limit does to a client, the log's
// events, the refusal reasons with their statuses and the metrics are in
// docs/proxy.md, the operator's guide.
//
// # Lifecycle
//
// The caller owns the listener, the signals and the sources of the files:
// [Config] takes loader functions for the CA bundle and the server
// certificate, and a CRL source (files, or a URL that a crlsource.Follower
// follows, which Serve runs) whose bytes the proxy reads with
// revoke.ParseCRLFile and judges with revoke.MayReplace. [New] loads them
// and fails on any bad input, so that nothing is served from a half-read
// configuration. [Proxy.Serve] serves a plain listener (it does TLS
// itself) until its context ends or [Proxy.Shutdown] drains it.
// [Proxy.Reload] reads the sources and the policy file again: each part
// that loads and checks out is used from the next handshake and the next
// request of open connections on, and a part that fails keeps the last
// good one ([ReloadFailure] tells which failed). No connection is dropped
// by a reload. [Proxy.HealthHandler] and [Proxy.MetricsHandler] serve on a
// listener of the caller's choosing. Every method is safe for concurrent
// use.
//
// # Guarantees
//
// No request reaches the upstream from a client whose certificate does
// not chain to the bundle, is outside its validity, lacks the clientAuth
// EKU, is a CA certificate, or is revoked by the CRL of its issuer, nor
// while that CRL is past nextUpdate beyond Config.CRLGrace: revoke.Judge
// decides, in tls.Config.VerifyConnection (resumed sessions too) and again
// on the next request of every open connection after a reload changed the
// bundle or the CRL. An open tunnel or stream of a client refused since is
// closed, and so is an idle connection of a client refused for a reason
// of its own (revoked, expired, no longer chaining to the bundle). With
// Config.Refusal RefusalPage the handshake passes and the same checks
// answer every request of a refused client with a page that says why; none
// reaches the upstream either.
//
// No request reaches the upstream without the identity headers of its
// client, and no inbound header of their namespace survives: the proxy
// deletes every header of the identity.Namespace, then sets its own, in
// ReverseProxy.Rewrite (never Director, whose request a client's
// Connection header could strip) or on the HTTP/1 direct way, which keeps
// that order.
//
// Every wait and size is bounded (Config's limits, each with a Default
// constant). Every refusal has a reason, one of the Reason constants,
// which is logged and counted: revoke's for the certificate checks,
// package policy's for the routes, the proxy's own for the rest.
//
// # Rooms
//
// Package identity renders a verified client as headers; package
// proxy/policy routes a request and judges its client by the rule of its
// route; package revoke judges a certificate against the CRLs; package
// crlsource brings a CRL's bytes from a URL; internal/certreload holds the
// proxy's own certificate and internal/endpoint reads its addresses. This
// package admits connections, keeps the trust in use (CA bundle, CRLs,
// certificate) and reloads it, routes by the policy in use, forwards,
// answers refusals, and logs and counts.
//
// Requests go upstream through httputil.ReverseProxy and net/http's
// Transport, but for one without a body or Upgrade to a plain http
// upstream: that one takes the direct way of package
// proxy/internal/h1direct, a twin of theirs with the same semantics for
// less CPU, tied to the proxy by its Rewriter interface.
// Config.StandardForwarding sends every request the standard way.
package proxy

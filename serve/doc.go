// Package serve is the online face of a CA: it publishes the CA
// certificate, its chain and the current CRL over HTTP and HTTPS, keeps the
// CRL fresh, and lets replicas learn of a new CRL at once. It works over
// package ca and package revoke; it never reads the CA directory itself,
// and nothing but the paths below is reachable through it. cmd/minica
// wires it (flags, listeners, certificates, signals).
//
// The other products of serve are http.Handlers in packages of their own,
// which serve routes to and counts: the OCSP responder (package
// minica/serve/ocsp, Config.OCSP), online renewal and the first
// certificate by bootstrap token (minica/serve/renew, Config.Renew),
// enrollment links (minica/serve/enroll, Config.Enroll), sign-in with an
// OpenID provider (minica/serve/signin, Config.Signin) and the ACME
// server (minica/serve/acme, Config.ACME, /acme/... on HTTPS). Server.ServeOCSP serves the responder alone on a
// listener of its own, on fasthttp (serve/internal/fastocsp), or on
// net/http when built with the tag stdocsp.
//
// Below them, internal packages hold what serve and its handlers share:
// serve/internal/connlimit bounds each listener's connections whichever
// HTTP server reads them, serve/internal/etag is the entity tag of the
// contract below, serve/internal/httpreply is an answer as data that
// either HTTP server writes, serve/internal/ratelimit the per-address
// and total token buckets of enrollment links and bootstrap tokens, and
// serve/internal/servetest the tests' fixtures.
//
// # Paths
//
// GET and HEAD only (405 otherwise, 404 for any other path):
//
//	/ca.crt     the CA certificate, DER, application/pkix-cert
//	/ca.pem     the CA certificate, PEM, application/x-pem-file
//	/chain.pem  the chain handed out with leaves, PEM
//	/crl.der    the current CRL, DER, application/pkix-crl
//	/crl.pem    the current CRL, PEM, application/x-pem-file
//	            (also the path of the CA's CRL URL, when set: as /crl.der)
//	/crl-delta.der, /crl-delta.pem
//	            the current delta CRL alone, DER or PEM, when there is
//	            one that applies to the current CRL; 404 otherwise
//	/root-crl.der, /root-crl.pem
//	            on an intermediate CA, the root's CRL that it keeps
//	            (`minica crl import-root`), also at the path of the root's
//	            CRL URL (the intermediate certificate's distribution point)
//	            when that URL names the host of the CA's own CRL or OCSP
//	            URL; 404 on any other CA (see rootcrl.go)
//	/ocsp       Config.OCSP, every method, and /ocsp/... (RFC 5019 GET);
//	            also the path of Config.OCSPURL and below it, and POST /
//	            (openssl ocsp -url http://HOST:PORT); 404 without a
//	            responder (package minica/serve/ocsp); --listen-ocsp serves
//	            it alone on a listener of its own (Server.ServeOCSP)
//	/enroll/... Config.Enroll, GET, HEAD and POST: the one-time links of
//	            `minica enroll` (package minica/serve/enroll); 404 without it
//	/signin/... Config.Signin, and GET and HEAD of /: its start page (package
//	            minica/serve/signin); 404 without it (POST / stays OCSP's)
//	/healthz    the CRL's state, whether serve can sign and whether its store
//	            answers: 200, or 503 when the CRL is expired or not yet
//	            valid, the store does not answer, or the CA key (in a
//	            token) cannot sign
//	/metrics    Prometheus text
//
// POST only, on the HTTPS listener with a client certificate: the
// renewal handler (Config.Renew, package minica/serve/renew), 404 with the
// reason renewal-disabled without one:
//
//	/renew         a CSR in, the client certificate's successor and chain out
//	/renew/keygen  no body in, a new key, its certificate and chain out
//	               (only with renew.Config.Keygen)
//
// POST only, on the HTTPS listener, no client certificate needed: the same
// handler (Config.Renew), 404 with the reason bootstrap-disabled without
// one:
//
//	/bootstrap     a one-time token of `minica token` in "Authorization:
//	               Bearer TOKEN" and a CSR in, the token's certificate and
//	               chain out; failed tries bounded per address, the token
//	               never logged
//
// Request targets are refused (400) unless they are a plain origin-form
// path: no percent-encoding, backslash, empty or dot segment. The CA files
// are read once, by ca.Open; the CRL only through [ca.CA.ReadPublishedCRL],
// which refuses a crl.der that is not a regular file (a planted symlink).
//
// # Caching
//
// The ETag of a CRL, and of a CA file, is the strong tag
// "sha256:<hex of SHA-256 of the DER>" (of the concatenated DER for the
// chain), so that a client computes the ETag of the copy it holds.
// Last-Modified is the CRL's thisUpdate (the CA certificate's notBefore
// for the CA files). If-None-Match, or without it If-Modified-Since, gives
// 304. Cache-Control is max-age = the seconds left to nextUpdate, at most
// [MaxAge] (300); "max-age=0, no-cache" past nextUpdate: a cache in front
// never serves an expired CRL, nor one more than 300 s older than the
// current one.
//
// # Long poll
//
// A GET of the CRL with If-None-Match naming the current CRL and
// "Prefer: wait=N" (RFC 7240) waits up to min(N, 60) seconds
// ([Config.MaxWait]) and answers 200 with the new CRL as soon as one is
// loaded, else 304 when the wait ends. A client whose copy is not current
// gets 200 at once. Every answer to a request with Prefer: wait carries
// "Preference-Applied: wait=S", S the wait honoured; with
// [Config.MaxWaiters] long polls already waiting, S is 0 and the answer is
// immediate. A client that sees no Preference-Applied (a static server)
// polls instead.
//
// # Delta CRLs
//
// A client that applies delta CRLs (RFC 5280 section 5.2.4) names the
// complete CRL it holds in the request header "Minica-CRL-Base: N" (N in
// decimal) on a path of the complete CRL. It gets the current delta CRL,
// with "Minica-Delta-CRL: base=B" (B the delta's base number), when the
// delta applies to N (B <= N < the delta's number); otherwise, and for a
// header that is not one decimal number, the complete CRL as any client
// does. Those answers carry "Vary: Minica-CRL-Base". The answer a client
// would get is the one If-None-Match and the long poll compare: a new
// delta CRL alone wakes only the long polls that follow delta CRLs
// (Minica-CRL-Base, or the delta's own paths), a new complete CRL all of
// them. A delta is served only when it applies to the complete CRL served
// (revoke.CRL.WithDelta) and may replace what is served (revoke.MayReplace
// of the two applied); Watch reads it with ca.CA.PublishedDelta when
// ca.CA.DeltaCRLStamp changes.
//
// # Keeping the CRL fresh
//
// [Server.Watch] serves a CRL that `minica revoke` or `minica crl`
// published from another process once it verifies and its number is
// higher. It hears of one at once: on Linux the file store watches the CA
// directory with inotify (crl.der moved into place, the revocation log
// written), on PostgreSQL the store notifies (below); it also stats
// crl.der every [Config.PollInterval] (250 ms), the fallback where no
// notification comes. When the served CRL
// is past half its lifetime (revoke.Freshness), Watch re-signs it with
// [ca.CA.PublishCRL] under the CA lock, as `minica crl` does, with the CA's
// CRL lifetime; a failure is logged, counted and retried with backoff
// (5 s doubling to 5 min, and at most a quarter of the time the CRL has
// left). Without a Signer (serve --no-sign) it warns in the log, /healthz
// and /metrics from the half-life on that the CRL will lapse at nextUpdate.
//
// On a PostgreSQL store several Servers (replicas on several hosts) share
// one database: only the one holding the CRL signer's lease
// (ca.CA.HoldCRLSigner, an advisory lock) re-signs and publishes; every
// one also wakes at a CRL saved by any process (ca.CA.CRLNotifications,
// LISTEN minica_crl). A signer whose database holds an older CRL than the
// one it serves (restored from a backup) re-applies the served CRL's
// revocations first (ca.CA.Reconcile).
//
// Watch also stats the revocation log (db/revoked.log): when it changed
// after the served CRL was written, the revocations that CRL lacks
// (ca.CA.Unpublished) are published a round later, under the CA lock, and
// the OCSP responder is told at once (Config.OnCRLChange).
//
// # Limits
//
// Each listener keeps at most [Config.MaxConns] connections; when full, a
// new connection closes the oldest one not in a request (still sending its
// headers, or idle), so that slow clients cannot hold the server. Request
// headers must arrive within ReadHeaderTimeout (10 s) and fit in
// MaxHeaderBytes (16 KiB, else 431); idle keep-alive connections close after
// IdleTimeout (2 min); a response must be written within MaxWait plus a
// minute.
package serve

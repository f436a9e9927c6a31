// Package crlsource brings the bytes of a CRL from files or a URL, for the
// proxy and `minica crl fetch`, bounded. It judges nothing: whether the
// bytes are a CRL, who signed it, and whether it may replace the one held
// is decided by its user (revoke.ParseCRLFile and revoke.MayReplace).
//
// # Sources
//
// A [Source] gives the bytes of a CRL file as they are now: [Files] reads
// files again at every call, a [Follower] gives the CRL of a URL it took
// last. A Follower is a [Followed] source: its user runs Follow with a
// [Sink], which judges each new CRL as it arrives and hears of every fetch.
//
// # Fetching
//
// [HTTP.Fetch] makes one conditional GET over http or https (verified
// against HTTP.RootCAs, else the system roots): If-None-Match carries
// "sha256:<hex>" of the DER held, the tag `minica serve` gives a CRL (plus
// the server's own tag of those bytes when it sent another, as nginx does),
// and If-Modified-Since the Last-Modified of the held copy. A 304 keeps what
// is held. Everything is bounded: dialling, the TLS handshake, the wait for
// the response headers, the whole body (a response that never ends times
// out), and its size (DefaultMaxBytes). A body of known length is read
// into one array of its size, the caller's; one of unknown length into a
// buffer that is kept after a failure for the retries, so that they never
// cost more than one buffer of MaxBytes against a server that answers too
// much. A failure is a [*FetchError] with a Reason constant.
//
// # Following
//
// [Follower] keeps a CRL current. At start it fetches once, retrying a few
// times, and falls back on its cache file when the URL cannot be reached;
// then it follows the server: each request asks `Prefer: wait=N` (the
// long poll of `minica serve`, RFC 7240). A response with
// Preference-Applied means the server held the request until a new CRL or
// the end of the wait, so the next request goes out at once; without it (a
// plain HTTP server) the next one waits Refresh. A new CRL is handed to
// Sink.Changed; once taken, it is written to the cache file atomically,
// and its bytes are let go: the Follower keeps the CRL's SHA-256 and tag,
// and gives the bytes again from the cache file or the URL if asked.
// A failed fetch is retried with exponential backoff and jitter, from one
// second up to five (MaxBackoff, at most Refresh), and reported to
// Sink.FetchFailed: after a long outage the next retry is never more than
// five seconds away.
//
// # Delta CRLs
//
// A Follower whose Sink is a [DeltaSink] sends its Base as [HeaderBase];
// `minica serve` may answer with a delta CRL against it ([HeaderDelta]),
// which the Follower keeps beside the complete CRL ([Follower.Delta], and
// Cache+".delta") until a complete CRL replaces both. When the sink
// refuses a delta, the next request goes without a base, for the complete
// CRL. The Follower judges no delta: its sink does.
package crlsource

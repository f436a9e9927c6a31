// Package agent is the renewal client a service runs: it keeps one
// certificate fresh by renewing it at `minica serve`'s renewal endpoint
// (POST /renew over HTTPS), authenticated by the certificate itself, and
// can get the first one with a one-time bootstrap token.
//
// # Schedule
//
// A certificate is due for renewal once [Config.RenewAt] of its lifetime
// (notAfter - notBefore) has passed: [DueAt]. Until then the agent sleeps
// on one timer (at most [MaxSleep], so that a clock that jumped is noticed)
// and does nothing else. A failed renewal is retried after [Backoff]:
// exponential from RetryMin to RetryMax, with jitter, and never later than
// a quarter of the time the certificate has left. A certificate that has
// expired, or a refusal no retry can change (revoked, another CA, a
// mismatched identity), ends [Agent.Run] with a *[Refusal] or an
// [ExpiredError]: a certificate cannot renew itself back.
//
// # Renewal
//
// The agent generates a new key of the old key's type and size, sends a CSR
// with the old certificate's subject and SANs, and verifies the answer: a
// certificate for the new key with the old identity, signed by the CA of
// the chain. Then it writes, each atomically and durably with the mode and
// owner of the file it replaces: the chain file (when set), the certificate
// (with the chain after it when the old file held one), and the key last.
// The new key is first written beside the key as KEY.next, before the
// request is sent; should the agent stop between the certificate and the
// key, the next start finds a KEY.next that matches the certificate and
// moves it into place (and a KEY.next that matches nothing is removed).
//
// # The first certificate
//
// With [Config.TokenFile] and no certificate file yet, [Agent.Run] first
// gets one: it makes an ECDSA P-256 key here, writes it as KEY.next, and
// posts a CSR with no names to serve's [BootstrapPath] with the one-time
// token (`minica token`) as a bearer token, over HTTPS verified against
// Roots and without a client certificate. The answer must certify the new
// key and chain to Roots; its names are the token's. It is installed as a
// renewal is (chain file, certificate, then the key), and from then on
// the certificate renews as any other. A refusal of the token (unknown,
// used, cancelled, expired) ends Run; other failures are retried with the
// same key, kept as KEY.next across runs too, since serve answers a used
// token again with the certificate it gave for that key (an answer lost to
// a timeout or a restart). Once the certificate file exists the token is
// not read again.
//
// # Exec
//
// After a renewal the command of [Config.Exec] runs, as an argument vector
// executed directly, never through a shell ([SplitCommand] turns a command
// line into one, honouring quotes only), with MINICA_AGENT_CERT,
// MINICA_AGENT_KEY and MINICA_AGENT_SERIAL in its environment, its output
// on the agent's log, for at most [Config.ExecTimeout].
package agent

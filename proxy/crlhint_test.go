package proxy

import (
	"testing"
	"time"
)

// The lines that say the CRL is past its nextUpdate carry the caller's
// CRLExpiredHint, what the operator should do (issue 31, point 2): the
// proxy states facts, cmd chooses the words.
func TestCRLExpiredHintLogged(t *testing.T) {
	const hint = "publish a fresh one"
	e := newEnv(t, func(c *Config) { c.CRLExpiredHint = hint; c.CRLGrace = time.Hour })
	cert, key := e.ca.Client(t, "alice")
	e.advance(90 * time.Minute) // the CRL's nextUpdate is an hour away
	e.get(e.client(cert, key, false), "/", nil)
	e.waitLog("crl-grace-warning", `hint="`+hint+`"`)
	e.advance(2 * time.Hour)
	e.client(cert, key, false).Get(e.url("/"))
	e.waitLog("crl-expired-error", `hint="`+hint+`"`)
}

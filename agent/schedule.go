package agent

import (
	"crypto/x509"
	"time"
)

// DefaultRenewAt is the fraction of a certificate's lifetime after which
// it is renewed: a third of it is left for retries.
const DefaultRenewAt = 0.66

// MaxSleep bounds one sleep of the agent: it re-reads the certificate and
// the clock at least this often, in case the clock jumped (a suspended
// machine) or the files were replaced by hand.
const MaxSleep = 12 * time.Hour

// Defaults of the retry schedule.
const (
	DefaultRetryMin = 5 * time.Second
	DefaultRetryMax = 5 * time.Minute
)

// DueAt returns when cert is due for renewal: once the fraction renewAt
// (0 to 1) of its lifetime has passed. renewAt 0 is its notBefore (at once).
func DueAt(cert *x509.Certificate, renewAt float64) time.Time {
	life := cert.NotAfter.Sub(cert.NotBefore)
	return cert.NotBefore.Add(time.Duration(float64(life) * renewAt))
}

// Backoff returns the wait before retry number attempt (1 for the first
// retry): lo doubled attempt-1 times, at most hi, and at most a quarter of
// left (the time to the certificate's notAfter), but never under a second;
// the wait is then drawn from its upper half by jitter (0 to 1), so that
// agents that failed together do not retry together.
func Backoff(attempt int, lo, hi, left time.Duration, jitter float64) time.Duration {
	d := lo
	for i := 1; i < attempt && d < hi; i++ {
		d *= 2
	}
	d = max(min(d, hi, left/4), time.Second)
	jitter = min(max(jitter, 0), 1)
	return d/2 + time.Duration(float64(d/2)*jitter)
}

// DaysLeft is the time from now to notAfter in days, for the log.
func DaysLeft(cert *x509.Certificate, now time.Time) float64 {
	return cert.NotAfter.Sub(now).Hours() / 24
}

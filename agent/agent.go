package agent

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.step.sm/crypto/keyutil"

	"minica/internal/eventlog"
)

// Defaults of Config.
const (
	DefaultTimeout  = 30 * time.Second
	DefaultAttempts = 4 // attempts of a --once run
)

// Config configures an Agent. URL, Roots, CertFile and KeyFile are
// required.
type Config struct {
	// URL is serve's HTTPS listener, https://HOST:PORT (and a path prefix,
	// if a proxy in front adds one); RenewPath is appended.
	URL string
	// Roots verify serve's server certificate and the renewed
	// certificate's chain.
	Roots *x509.CertPool
	// CertFile and KeyFile are the service's certificate (PEM, the leaf
	// first; a chain after it is kept after the new leaf) and its
	// unencrypted key. ChainFile, when set, receives the CA chain.
	CertFile, KeyFile, ChainFile string
	// TokenFile, when set, holds a one-time bootstrap token (`minica
	// token`): while CertFile does not exist, Run first trades the token
	// and a CSR for a new key made here at serve's BootstrapPath (see
	// bootstrap), then renews that certificate as any other.
	TokenFile string
	// RenewAt is the fraction of the lifetime after which the
	// certificate is renewed (see DueAt); 0 means renew at once.
	RenewAt float64
	// Once makes Run check once: renew if due (retrying up to Attempts
	// times), then return.
	Once     bool
	Attempts int
	// Exec is run after each renewal (see the package doc); nil for none.
	Exec        []string
	ExecTimeout time.Duration
	// RetryMin and RetryMax bound the waits between failed attempts.
	RetryMin, RetryMax time.Duration
	// Timeout bounds one renewal request (connect, handshake, answer).
	Timeout time.Duration
	// Log receives one line per event (package eventlog's format); nil
	// discards them. ExecOutput receives the output of Exec (nil: Log).
	Log, ExecOutput io.Writer
	// Now is the clock and NewTimer makes the timers of the waits (the
	// channel and a stop function); tests inject both. Nil means the real
	// ones.
	Now      func() time.Time
	NewTimer func(time.Duration) (<-chan time.Time, func() bool)
	// Jitter returns a number from 0 to 1 for Backoff; nil is random.
	Jitter func() float64
	// Reload, when it receives, makes the agent re-read its files and the
	// clock at once (SIGHUP).
	Reload <-chan struct{}
}

// Agent keeps one certificate fresh. Make one with New and call Run.
type Agent struct {
	cfg          Config
	url          string
	bootstrapURL string
	log          *logger
	// wakeups counts the times the agent woke from a wait, for the
	// benchmark of its idle behaviour.
	wakeups atomic.Uint64
}

// New checks cfg and fills its defaults.
func New(cfg Config) (*Agent, error) {
	u, err := url.Parse(cfg.URL)
	switch {
	case err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("the renewal URL %q is not https://HOST:PORT", cfg.URL)
	case u.Scheme != "https":
		return nil, fmt.Errorf("the renewal URL %q is not https: renewal authenticates with the certificate over TLS", cfg.URL)
	case cfg.Roots == nil:
		return nil, errors.New("no CA to verify serve with")
	case cfg.CertFile == "" || cfg.KeyFile == "":
		return nil, errors.New("the certificate and key files are required")
	case cfg.RenewAt < 0 || cfg.RenewAt >= 1:
		return nil, fmt.Errorf("the renewal fraction %v is not from 0 to below 1", cfg.RenewAt)
	case cfg.Exec != nil && len(cfg.Exec) == 0:
		return nil, errors.New("the command to run after a renewal is empty")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.NewTimer == nil {
		cfg.NewTimer = func(d time.Duration) (<-chan time.Time, func() bool) {
			t := time.NewTimer(d)
			return t.C, t.Stop
		}
	}
	if cfg.Jitter == nil {
		cfg.Jitter = rand.Float64
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.RetryMin, DefaultRetryMin)
	def(&cfg.RetryMax, DefaultRetryMax)
	def(&cfg.Timeout, DefaultTimeout)
	def(&cfg.ExecTimeout, DefaultExecTimeout)
	if cfg.Attempts <= 0 {
		cfg.Attempts = DefaultAttempts
	}
	if cfg.ExecOutput == nil {
		cfg.ExecOutput = cfg.Log
		if cfg.ExecOutput == nil {
			cfg.ExecOutput = io.Discard
		}
	}
	a := &Agent{cfg: cfg, log: &logger{w: cfg.Log, now: cfg.Now}}
	base := strings.TrimSuffix(u.String(), "/")
	a.url, a.bootstrapURL = base+RenewPath, base+BootstrapPath
	return a, nil
}

func (a *Agent) now() time.Time { return a.cfg.Now() }

// Wakeups returns how often the agent has woken from a wait.
func (a *Agent) Wakeups() uint64 { return a.wakeups.Load() }

// ExpiredError ends Run when the certificate has expired: it cannot
// authenticate its own renewal any more.
type ExpiredError struct {
	File     string
	NotAfter time.Time
}

func (e *ExpiredError) Error() string {
	return fmt.Sprintf("the certificate %q expired at %s: it can no longer renew itself", e.File, e.NotAfter.UTC().Format(time.RFC3339))
}

// ExecError is returned by a Once run whose renewal succeeded but whose
// command failed: the new files are in place.
type ExecError struct{ Err error }

func (e *ExecError) Error() string {
	return "renewed, but the command after it failed: " + e.Err.Error()
}
func (e *ExecError) Unwrap() error { return e.Err }

// Run keeps the certificate fresh until ctx is done (then it returns nil)
// or, with Once, checks once. It returns an *ExpiredError or a permanent
// *Refusal when the certificate cannot be renewed any more, and an error
// for files it cannot read or write.
func (a *Agent) Run(ctx context.Context) error {
	if first, err := a.bootstrapIfNeeded(ctx); err != nil || ctx.Err() != nil || (first && a.cfg.Once) {
		return err
	}
	attempt := 0
	renewed := false // the last round renewed: a new certificate already due is not renewed at once
	for {
		if ctx.Err() != nil {
			return nil
		}
		cur, err := a.load()
		if err != nil {
			return err
		}
		now := a.now()
		if now.After(cur.cert.NotAfter) {
			a.log.event("expired", "serial", serialHex(cur.cert), "not_after", rfc3339(cur.cert.NotAfter))
			return &ExpiredError{File: a.cfg.CertFile, NotAfter: cur.cert.NotAfter}
		}
		due := DueAt(cur.cert, a.cfg.RenewAt)
		if now.Before(due) {
			attempt, renewed = 0, false
			a.log.event("waiting", "serial", serialHex(cur.cert), "days_left", days(cur.cert, now), "left", left(cur.cert, now),
				"not_after", rfc3339(cur.cert.NotAfter), "renew_at", rfc3339(due))
			if a.cfg.Once {
				return nil
			}
			a.sleep(ctx, due.Sub(now))
			continue
		}
		var wait time.Duration
		if renewed {
			// The successor is due as soon as it came (a lifetime too
			// short for RenewAt and the CA's backdating): not a loop.
			attempt++
			wait = Backoff(attempt, a.cfg.RetryMin, a.cfg.RetryMax, cur.cert.NotAfter.Sub(now), a.cfg.Jitter())
			a.log.event("renewed-due", "serial", serialHex(cur.cert), "days_left", days(cur.cert, now),
				"retry_in", wait.Round(time.Millisecond).String(), "reason", "the new certificate is already due: its lifetime is short for the renewal fraction")
			renewed = false
			if a.cfg.Once {
				return nil
			}
			a.sleep(ctx, wait)
			continue
		}
		next, err := a.renew(ctx, cur)
		if err == nil {
			renewed = true
			a.log.event("renewed", "serial", serialHex(next), "old_serial", serialHex(cur.cert),
				"days_left", days(next, a.now()), "left", left(next, a.now()), "not_after", rfc3339(next.NotAfter), "renew_at", rfc3339(DueAt(next, a.cfg.RenewAt)))
			execErr := a.exec(ctx, next)
			if a.cfg.Once {
				if execErr != nil {
					return &ExecError{Err: execErr}
				}
				return nil
			}
			continue
		}
		if ctx.Err() != nil {
			return nil
		}
		var ref *Refusal
		if errors.As(err, &ref) && ref.Permanent() {
			a.log.event("refused", "serial", serialHex(cur.cert), "status", strconv.Itoa(ref.Status), "reason", ref.Reason, "detail", ref.Detail)
			return ref
		}
		var fileErr *fileError
		if errors.As(err, &fileErr) {
			return fileErr.err
		}
		attempt++
		left := cur.cert.NotAfter.Sub(a.now())
		wait = Backoff(attempt, a.cfg.RetryMin, a.cfg.RetryMax, left, a.cfg.Jitter())
		if ref != nil && ref.RetryAfter > wait && ref.RetryAfter < left/2 {
			wait = ref.RetryAfter
		}
		if a.cfg.Once && attempt >= a.cfg.Attempts {
			a.log.event("renew-failed", "serial", serialHex(cur.cert), "attempt", strconv.Itoa(attempt), "error", err.Error(), "days_left", days(cur.cert, a.now()))
			return fmt.Errorf("renewing after %d attempts: %w", attempt, err)
		}
		a.log.event("renew-failed", "serial", serialHex(cur.cert), "attempt", strconv.Itoa(attempt), "error", err.Error(),
			"days_left", days(cur.cert, a.now()), "retry_in", wait.Round(time.Millisecond).String())
		a.sleep(ctx, wait)
	}
}

// fileError marks a failure to write the agent's own files, which no
// retry mends.
type fileError struct{ err error }

func (e *fileError) Error() string { return e.err.Error() }

// renew makes a new key and CSR, posts it and installs the answer.
func (a *Agent) renew(ctx context.Context, cur *current) (*x509.Certificate, error) {
	key, err := sameKind(cur.key)
	if err != nil {
		return nil, &fileError{err}
	}
	csr, err := newCSR(cur.cert, key)
	if err != nil {
		return nil, &fileError{err}
	}
	if err := a.writePending(key); err != nil {
		return nil, &fileError{err}
	}
	leaf, chain, err := a.post(ctx, cur, key, csr)
	if err != nil {
		// No certificate for it came: the next attempt makes another.
		os.Remove(a.cfg.KeyFile + pendingSuffix)
		return nil, err
	}
	if err := a.install(cur, leaf, chain); err != nil {
		return nil, &fileError{fmt.Errorf("installing the renewed certificate (serial %s): %w", serialHex(leaf), err)}
	}
	return leaf, nil
}

// exec runs Config.Exec after a renewal and logs how it went.
func (a *Agent) exec(ctx context.Context, cert *x509.Certificate) error {
	if a.cfg.Exec == nil {
		return nil
	}
	env := []string{"MINICA_AGENT_CERT=" + a.cfg.CertFile, "MINICA_AGENT_KEY=" + a.cfg.KeyFile, "MINICA_AGENT_SERIAL=" + serialHex(cert)}
	start := time.Now()
	err := runExec(ctx, a.cfg.Exec, env, a.cfg.ExecOutput, a.cfg.ExecTimeout)
	if err != nil {
		a.log.event("exec-failed", "command", a.cfg.Exec[0], "error", err.Error())
		return err
	}
	a.log.event("exec", "command", a.cfg.Exec[0], "took", time.Since(start).Round(time.Millisecond).String())
	return nil
}

// sleep waits d (at most MaxSleep), until ctx is done or a reload.
func (a *Agent) sleep(ctx context.Context, d time.Duration) {
	c, stop := a.cfg.NewTimer(min(d, MaxSleep))
	defer stop()
	select {
	case <-ctx.Done():
	case <-c:
	case <-a.cfg.Reload:
		a.log.event("reload")
	}
	a.wakeups.Add(1)
}

// sameKind generates a key of the kind and size of key.
func sameKind(key crypto.Signer) (crypto.Signer, error) {
	var (
		k   crypto.Signer
		err error
	)
	switch pub := key.Public().(type) {
	case *ecdsa.PublicKey:
		k, err = keyutil.GenerateSigner("EC", pub.Curve.Params().Name, 0)
	case *rsa.PublicKey:
		k, err = keyutil.GenerateSigner("RSA", "", pub.N.BitLen())
	case ed25519.PublicKey:
		k, err = keyutil.GenerateSigner("OKP", "Ed25519", 0)
	default:
		return nil, fmt.Errorf("cannot generate a key like the current one, of type %T", pub)
	}
	if err != nil {
		return nil, fmt.Errorf("generating the new key: %w", err)
	}
	return k, nil
}

// serialHex prints c's serial the way `minica list` and `show` do: 32 hex
// digits, zero-padded.
func serialHex(c *x509.Certificate) string { return fmt.Sprintf("%032x", c.SerialNumber) }

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// days is the days_left field, with the time left itself after it for
// certificates that live minutes.
func days(c *x509.Certificate, now time.Time) string {
	return strconv.FormatFloat(DaysLeft(c, now), 'f', 2, 64)
}

func left(c *x509.Certificate, now time.Time) string {
	return c.NotAfter.Sub(now).Round(time.Second).String()
}

// logger writes one line per event, in package eventlog's format.
type logger struct {
	mu  sync.Mutex
	w   io.Writer
	now func() time.Time
}

func (l *logger) event(event string, kv ...string) {
	if l.w == nil {
		return
	}
	b := eventlog.AppendHead(nil, l.now(), "agent-"+event)
	for i := 0; i+1 < len(kv); i += 2 {
		b = eventlog.AppendKV(b, kv[i], kv[i+1])
	}
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	l.w.Write(b)
}

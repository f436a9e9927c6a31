package certreload

import (
	"crypto/tls"
	"sync"
	"sync/atomic"
	"time"
)

// Options tune a Cert; the zero value loads only at Reload.
type Options struct {
	// MaxAge, when positive, makes GetCertificate load the certificate
	// again once the last load started that long ago by Now (or Now went
	// back before it), so that a renewed certificate is served without a
	// signal.
	MaxAge time.Duration
	// Now is the clock of MaxAge; nil means time.Now.
	Now func() time.Time
	// Failed, when set, hears of a load that GetCertificate started and
	// that failed, once for a run of the same error: such a load has no
	// caller to return it to. Reload returns its error instead.
	Failed func(error)
}

// Cert is a TLS certificate loaded again on demand, keeping the last good
// one. Its methods are safe for concurrent use.
type Cert struct {
	load func() (tls.Certificate, error)
	opts Options
	cert atomic.Pointer[tls.Certificate]

	loading sync.Mutex // one load at a time

	mu      sync.Mutex // guards what follows, never held during a load
	at      time.Time  // the start of the last load
	expired bool       // Expire was called since
	lastErr string     // the error last told to Failed
}

// New loads the certificate with load, which must return a fresh one at
// every call (reading its files again); a first load that fails is the
// error of New.
func New(load func() (tls.Certificate, error), opts Options) (*Cert, error) {
	c := &Cert{load: load, opts: opts}
	if err := c.Reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// Reload loads the certificate again. On success it is served from the
// next handshake; on failure the one held stays and the error is returned.
func (c *Cert) Reload() error {
	c.loading.Lock()
	defer c.loading.Unlock()
	c.mu.Lock()
	c.at = c.now()
	c.mu.Unlock()
	cert, err := c.load()
	if err != nil {
		return err
	}
	c.cert.Store(&cert)
	c.mu.Lock()
	c.lastErr = ""
	c.mu.Unlock()
	return nil
}

// Expire makes the next GetCertificate load the certificate again.
func (c *Cert) Expire() {
	c.mu.Lock()
	c.expired = true
	c.mu.Unlock()
}

// Current returns the certificate held.
func (c *Cert) Current() *tls.Certificate {
	return c.cert.Load()
}

// GetCertificate is a tls.Config.GetCertificate: the certificate held,
// loaded again first when it is due (see Options.MaxAge and Expire). Only
// the handshake that finds it due waits for the load; the others get the
// certificate held meanwhile. It never fails once New succeeded.
func (c *Cert) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c.due() {
		if err := c.Reload(); err != nil {
			c.failed(err)
		}
	}
	return c.Current(), nil
}

// due reports whether a load is due, and if so claims it: the next
// handshakes find it started.
func (c *Cert) due() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	old := c.opts.MaxAge > 0 && (now.Sub(c.at) >= c.opts.MaxAge || now.Before(c.at))
	if !old && !c.expired {
		return false
	}
	c.at, c.expired = now, false
	return true
}

// failed tells Options.Failed of err unless it was the last error told.
func (c *Cert) failed(err error) {
	c.mu.Lock()
	repeat := err.Error() == c.lastErr
	c.lastErr = err.Error()
	c.mu.Unlock()
	if !repeat && c.opts.Failed != nil {
		c.opts.Failed(err)
	}
}

func (c *Cert) now() time.Time {
	if c.opts.Now == nil {
		return time.Now()
	}
	return c.opts.Now()
}

package ca

import "context"

// HoldCRLSigner reports whether this handle is the one replica that
// re-signs the CRL, taking the lease when it is free. On the file store
// it is always true: every process on the directory may sign, one at a
// time under the lock file, as before. On PostgreSQL the lease is a
// session advisory lock (pg.LockClass, pg.LockCRLSigner) on a connection of
// the handle's own; a connection lost (a restart of the server) loses it,
// and the next call tries again. Safe from any goroutine.
//
// The lease decides who signs, not whether a CRL is correct: the numbers
// of CRLs are reserved under a row lock and strictly increase whoever
// signs, so two signers for a moment (a holder cut off from the server
// before it knows) never give one number twice.
func (c *CA) HoldCRLSigner() (bool, error) { return c.db.HoldCRLSigner() }

// ReleaseCRLSigner gives up the lease, if this handle holds it, so that
// another replica takes it at once (a graceful stop). Close does it too.
func (c *CA) ReleaseCRLSigner() { c.db.ReleaseCRLSigner() }

// CRLNotifications returns a channel that receives a value soon after any
// process publishes a CRL into the store (PostgreSQL's LISTEN on the
// channel minica_crl, which every saved CRL notifies), and once after each
// reconnection, when notifications may have been missed; on the file store
// on Linux, inotify on the CA directory (crl.der moved into place, the
// revocation log written). It is nil where neither is available: the
// caller polls. PostgreSQL's listener runs on a connection of its
// own until ctx is done, reconnecting with a backoff of 250 ms doubling to
// 5 s; a caller polls as well, at a slower pace, for the time it is cut off.
func (c *CA) CRLNotifications(ctx context.Context) <-chan struct{} {
	return c.db.CRLNotifications(ctx)
}

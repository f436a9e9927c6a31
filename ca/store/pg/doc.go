// Package pg is the PostgreSQL engine of the storage interface
// (store.Store): the issuance database of one CA in one database (tables
// minica_*, see schema/), opened through Engine. Its invariants are those
// of the file store, held by the database instead of by files:
//
//   - a serial is a primary key, and its pending row is committed before
//     the certificate is signed;
//   - a revocation is a committed row of minica_revocations before the
//     record changes and before the CRL is built;
//   - CRL numbers are reserved under SELECT ... FOR UPDATE of the one row
//     of minica_crl, so they strictly increase across every writer;
//   - every mutation holds a session advisory lock (LockClass, LockCA)
//     instead of the lock file: PostgreSQL releases it when the
//     holder's connection dies, even by SIGKILL; each write of a holder
//     checks that its session still holds it (lock.go), and fails with
//     store.ErrStoreLockLost when it does not.
//
// A transaction that fails for serialization (SQLSTATE 40001) or a
// deadlock (40P01) is retried, at most MaxAttempts times.
//
// The CA directory keeps the published copy of the current CRL (crl.pem,
// crl.der) and of the current delta CRL (crl-delta.pem, crl-delta.der),
// which SaveCRL and SaveDeltaCRL write after the database has the CRL,
// and CheckCRL repairs. Package ca never imports this one: the program passes
// Engine to it (cmd/minica does), so that only programs that use
// PostgreSQL link pgx.
package pg

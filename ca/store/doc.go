// Package store is the storage seam of a CA: the interface of its
// issuance database ([Store]), the records and revocation events it keeps,
// and what its engines share (the published copy of the current CRL, the
// encoding of a record, the errors a caller branches on).
//
// Engines: package file keeps the database in the CA directory's own
// files, package pg in a PostgreSQL database; both decode a record with
// package recordjson. Package storetest is the conformance suite: one
// table of cases that every engine passes, and the way a third engine is
// checked.
//
// # Invariants every engine keeps
//
//   - A serial is reserved (Reserve) and durable before its certificate
//     is signed, so a certificate never exists without a record.
//   - A revocation event is durable before the record it changes, and
//     the CRL is built from the events alone.
//   - CRL numbers strictly increase across every writer, also when the
//     clock goes back (NextCRLNumber), and a CRL with a lower number never
//     replaces the current one (SaveCRL).
//   - Every mutation holds the store's lock (Lock); a lock the holder
//     could lose without knowing makes its writes fail with
//     ErrStoreLockLost.
package store

// Package file is the file engine of the storage interface (store.Store):
// the issuance database of a CA kept in the CA directory's own files.
//
// # Files
//
// Every path is relative to the CA directory, reached through its os.Root.
//
//	db/XX/SERIAL.json   one record per serial ever reserved (XX: its first two
//	                    hex digits); one JSON line per state it reached, the
//	                    last whole line current (Reserve writes the pending
//	                    line, Complete appends the completed one)
//	db/names/NAME       the name index: the serial of every record of NAME,
//	                    one line each; derived from the records (Reindex)
//	db/revoked.log      the revocation log: one JSON line per event, appended
//	                    and synced before the record changes
//	db/enroll/ID.json   one file per enrollment; db/enroll/names/NAME the ID
//	                    of NAME's latest
//	db/acme/KIND/ID.json one file per ACME object (ACMEDir): a log of its
//	                    states, the last whole one current; written anew
//	                    atomically and durably, or a state appended
//	                    unsynced when Volatile (see objectMagic)
//	db/acme/nonces.tab  the ACME nonces (NonceTable): 2^18 slots of 32 bytes
//	                    written in place; never synced (a crash may lose
//	                    nonces)
//	db/crl-delta        the current delta CRL: its number in decimal, a
//	                    newline, then its DER (DeltaCRLFile)
//	crlnumber           the last CRL number reserved
//	crl.pem, crl.der    the current CRL, which is also the published copy
//	crl-delta.pem, crl-delta.der the published copy of the current delta
//	                    CRL, written after db/crl-delta
//	lock                flock(2)-ed around every mutation; the holder's pid
//
// # Durability
//
// A reservation is created with O_EXCL and not synced; its completion is
// appended, not synced: the CA syncs the certificate's files before it
// reports an issuance, and its check rebuilds a lost or torn record from
// them (Repair, DropUnreadable), rebuilds the name index (Reindex), and
// makes crl.pem and crl.der agree, and crl-delta.pem and crl-delta.der
// hold db/crl-delta (CheckCRL). State files are replaced
// atomically and durably (temp file, write, fsync, rename, fsync the
// directory); a revocation is synced before its record changes.
package file

// Package ca manages a private certificate authority kept in one directory:
// creating and opening it, locking it, durable atomic writes, the issuance
// database, serial numbers, certificate profiles, name validation and CA key
// loading.
//
// # Files and permissions
//
// The directory is 0700. Every path below is relative to it and is reached
// through an [os.Root], so no name can escape it.
//
//	ca.crt                     0644  the issuing CA certificate (PEM)
//	ca.key                     0600  the CA private key, PKCS#8 PEM, encrypted
//	                                 (PBES2, AES-256) unless created without a password
//	ca.key-uri                 0644  instead of ca.key: the RFC 7512 URI of a CA key kept in
//	                                 a PKCS#11 token (see [ParseKeyURI]); never a PIN
//	chain.pem                  0644  the chain handed out with every leaf (PEM)
//	settings.json              0644  CA settings: validities, CRL lifetime and URL
//	lock                       0600  held with flock(2) (LockFileEx on Windows) around every
//	                                 mutation; holds the holder's pid
//	db/XX/SERIAL.json          0644  one record per certificate ever signed
//	                                 (XX: the serial's first two hex digits)
//	db/names/NAME              0644  the name index: the serial of every record of NAME,
//	                                 one line each; derived from the records
//	certs/NAME/SERIAL.crt      0644  an issued certificate (PEM)
//	certs/NAME/SERIAL.key      0600  its private key, when minica generated it
//	certs/NAME/SERIAL.chain.pem 0644 the certificate followed by the CA chain
//	certs/NAME/current.crt     link  the newest certificate of NAME; also current.key
//	                                 (absent without a key) and current.chain.pem: relative
//	                                 symbolic links (hard links where refused), see [CA.Current]
//
// SERIAL is the certificate's serial number in 32 lowercase hex digits.
//
// # Durability
//
// State files are replaced atomically and durably ([Dir.WriteAtomic]). A
// serial is reserved by creating its record with O_EXCL before the
// certificate is signed, so a certificate never exists on disk without a
// record; the completed record is appended to it, and the last whole line
// of a record file is its current state. The certificate's files are
// created in place and synced before issuance reports success; the
// reservation and the completed record are atomic but not synced, and [CA.Check] rebuilds them from those files after
// a power loss. Check also completes or voids pending records, removes
// temporary files, rebuilds the name index from the records and points the
// current.* links at each name's newest certificate, which Issue moves one
// atomic rename at a time.
//
// # Finding certificates
//
// [CA.Resolve] answers which certificates a command-line argument means (a
// certificate file, a name or a serial), and [CA.ServerCert] which one to
// serve for a name; commands ask them rather than choose themselves. A
// name's records are found through the name index, which Issue appends to
// before it signs: the lookup costs one read per certificate of the name,
// whatever the size of the database.
//
// A revocation is appended to db/revoked.log and synced before its record
// changes; an append that fails is cut back, so the log holds whole lines
// only, and Check removes what older versions or a crash left half-written.
// [Init] writes ca.crt last and removes what it wrote when it fails.
//
// # The CA key
//
// The CA key is a PEM file (ca.key), encrypted or not, or a key in a
// PKCS#11 token that ca.key-uri names. [CA.KeySource] tells which, for the
// words a caller shows; [CA.OpenSigner] opens the key wherever it is, and
// asks its [SecretFunc] for the password or the PIN only when the key needs
// one. Callers never choose how a key is opened: they only know where a
// person keeps the secret.
//
// # Renewal
//
// [CA.Renew] issues a certificate's successor: the same name, profile,
// subject (copied as encoded) and SANs, with a new key unless told to
// keep it. The successor's record names its predecessor (renewal_of,
// written with the reservation) and the predecessor's names its newest
// successor (renewed_by, appended once the successor is issued); Check
// restores a renewed_by that a power loss undid. [CheckRenewable] and
// [CheckRenewalCSR] are the one judge of whether a certificate may be
// renewed and whether a request is a renewal of it; [CA.RenewalRequest]
// builds the request that batch renewal issues.
//
// # Stores
//
// The issuance database (records, revocation log, CRL number and current
// CRL, enrollments, renewal links) is a [store.Store]: the directory's
// files above (package ca/store/file), or a store of an [Engine] the
// program passes in [OpenOptions] and [InitOptions] (cmd/minica passes
// PostgreSQL's, package ca/store/pg), so that ca links no database
// driver. [OpenWith] and the settings' store choose the engine once; the
// CA then never asks which one it holds. A reservation is an opaque value
// that the engine which made it completes. [CA.CopyStore] copies a
// database between any two stores through the same interface.
//
// # Revocation and CRLs
//
// [CA.Revoke] appends to the revocation log (db/revoked.log) before it
// changes the record, and [CA.PublishCRL] builds the CRL from the log and
// writes crlnumber, crl.pem and crl.der in that order. A revocation whose
// publishing did not finish is what [CA.Unpublished] returns; a repeated
// Revoke says so (RevokeResult.Unpublished), and [CA.CheckWith] publishes it
// when given the CA key. A reason that takes the holder's access
// ([RevokesLine]: keyCompromise and others) also revokes every certificate
// renewed from the certificate, in the same append to the log; Check
// completes a line that a crash cut short. CRL numbers come from the signing time in
// milliseconds, kept strictly increasing, so that they keep growing after
// an older copy of the directory is restored. [CA.CRLStatus] sums up, for
// a monitor, the published CRL's freshness, the revocations it lacks and,
// on an intermediate, the root CRL it keeps.
package ca

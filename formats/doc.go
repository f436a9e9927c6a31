// Package formats encodes, decodes and detects the file formats a private CA
// deals in: PEM and DER certificates, CSRs, CRLs and keys, PKCS#8 (plain or
// PBES2-encrypted) and PKCS#12 bundles.
//
// It holds no policy and knows nothing of the CA directory: bytes in, values
// out, and the reverse. It never reads the clock: callers pass now.
//
// # Detection
//
// [Detect] recognizes PEM or DER by itself and parses what the input holds
// into an [Object], whose String method says what it found in plain words
// ("PEM certificate chain (3 certificates)", "DER PKCS#8 private key (ECDSA
// P-256)"). DER is classified by its ASN.1 outline before it is parsed, so a
// damaged certificate is reported as a damaged certificate; BER (indefinite
// lengths, as NSS writes) is converted to DER first. Errors match the
// sentinels [ErrEmpty], [ErrTruncated], [ErrMalformed] and [ErrUnknownFormat];
// asking for one kind and finding another gives a [*KindError] matching
// [ErrWrongKind] ("expected a private key, found a PEM certificate").
//
// # Conversions
//
// [Reencode] turns PEM into DER and back without changing the object's
// bytes. [EncodePrivateKey] writes a key as PKCS#8, SEC1 or PKCS#1, and
// encrypts PKCS#8 with PBES2 (PBKDF2-HMAC-SHA-256, AES-256-CBC) when given a
// password. [KeyMatchesCertificate] checks a key against a certificate.
//
// # PKCS#12
//
// Two profiles, [P12Modern] (PBES2 AES-256, SHA-256 MAC) and [P12Compat]
// (3DES, SHA-1 MAC, for macOS/iOS Keychain, Android, Windows 8.1 and older
// and Windows Server 2016 and older); never RC2, PBMAC1 or password-less bundles. Passwords must be non-empty
// printable ASCII ([CheckP12Password]); [GeneratePassword] makes one.
// [CheckP12] decodes a freshly written bundle and compares it with its key
// and certificate. [P12EncryptionInfo] reads a bundle's algorithms without
// the password. BER bundles (NSS, Firefox) are described but not decoded:
// [DecodeP12] returns [ErrUnsupported]. [DecodeP12] and [KeyData.Decrypt]
// refuse an iteration count above [MaxIterations] before deriving any key.
//
// # Inspection
//
// [Describe] returns a [Description] for `minica inspect`: JSON-ready, and
// printable with [Description.WriteText].
package formats

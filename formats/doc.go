// Package formats encodes, decodes and detects the file formats a private CA
// deals in: PEM and DER certificates, CSRs, CRLs and keys, PKCS#8 (plain or
// PBES2-encrypted) and PKCS#12 bundles.
//
// It holds no policy and knows nothing of the CA directory: bytes in, values
// out, and the reverse.
package formats

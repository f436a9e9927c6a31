//go:build !cgo || nopkcs11

package ca

// PKCS11Supported reports whether this build can use CA keys in PKCS#11
// tokens: only a cgo build can load a module.
const PKCS11Supported = false

// openToken fails: loading a PKCS#11 module (a C library) needs cgo.
func openToken(*KeyURI, []byte) (p11Token, error) { return nil, ErrPKCS11Unsupported }

// sessionLost is false: without cgo no session is ever opened.
func sessionLost(error) bool { return false }

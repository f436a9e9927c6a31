// Package certlint runs zlint over certificates and CRLs in tests.
//
// It restricts zlint to the lint sources minica promises to satisfy: RFC 5280,
// RFC 5480, RFC 5891, RFC 8813, RFC 3279 and the Community lints for
// certificates, and RFC 5280 and Community for CRLs. A result of warn, error
// or fatal is a finding; pass, NA, NE, notice and info are not. The zlint CLI
// exits 0 even when lints fail, so callers must read the findings, which this
// package does for them.
//
// Only tests import this package.
package certlint

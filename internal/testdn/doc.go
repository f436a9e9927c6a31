// Package testdn builds the DER of distinguished names for tests, with what
// pkix.Name will not write: a chosen string type per attribute (UTF8String,
// PrintableString, IA5String, T61String, BMPString), multi-valued RDNs,
// attributes in any order and attribute types no one knows.
//
// The identity package's tests compare its DN rendering with OpenSSL's on
// such names, and the proxy's interop tests send clients with them through
// Apache and nginx. It is for tests only.
package testdn

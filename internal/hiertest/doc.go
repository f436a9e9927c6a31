// Package hiertest holds the tests that prove a CA hierarchy (a root, its
// intermediates and their leaves) against real peers: name constraints that
// every verifier enforces on a leaf signed by hand with an intermediate's
// key, and the certificates and CRLs of a hierarchy linted by zlint. It has
// no non-test code.
package hiertest

// Package browsertest holds the real-browser interop test: a client
// certificate exported by `minica export p12` (both profiles) is imported
// into a fresh NSS database with pk12util, and headless Chromium, told by a
// managed policy to present it, loads a page through `minica proxy`. The
// upstream renders the identity the proxy forwarded and the test reads it
// back from the rendered DOM; after `minica revoke` and a proxy reload the
// same browser no longer gets the page. With `minica proxy --refusal page`
// a revoked and an expired certificate each get their refusal page, and a
// certificate Chromium no longer offers (expired by its own clock) gets
// the no-certificate page.
//
// The test is behind the interop build tag and needs root (it writes a
// Chromium policy file under /etc/chromium/policies/managed and removes it
// at the end) and the Debian packages chromium and libnss3-tools:
//
//	go test -tags interop ./internal/browsertest/
//
// Screenshots of the pages are written to $MINICA_BROWSER_ARTIFACTS, or to
// a new temporary directory that the test names in its log. The package has
// no non-test code.
package browsertest

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
// TestChromiumEnrollment follows an enrollment link. TestChromiumSignIn
// signs in to `minica serve --oidc-issuer` through a real OpenID provider
// (internal/testidp, on localhost: another site than serve on 127.0.0.1),
// gets a device's .p12, is let through the proxy with it, revokes it on My
// certificates and follows the refusal page back to the start page; a
// person whose email is not verified is refused.
//
// The tests are behind the interop build tag and need root (they write a
// Chromium policy file under /etc/chromium/policies/managed and remove it
// at the end) and the Debian packages chromium and libnss3-tools:
//
//	go test -tags interop ./internal/browsertest/
//
// Screenshots of the pages are written to $MINICA_BROWSER_ARTIFACTS, or to
// a new temporary directory that the test names in its log; to refresh the
// docs' copies, set $MINICA_ENROLL_DOCS (docs/enrollment),
// $MINICA_REFUSAL_DOCS (docs/proxy) or $MINICA_SIGNIN_DOCS (docs/sign-in)
// to the directory. The package has no non-test code.
package browsertest

// Package enroll answers the one-time links of `minica enroll` for serve:
// [Enroller] is the http.Handler of /enroll/TOKEN, which serve mounts on
// its HTTPS listener (Config.AllowHTTP only on a loopback listener, for
// tests).
//
// GET and HEAD answer the page of a pending enrollment: a form to choose a
// password (or have one generated) and a file type. POST answers that
// form: the key is generated in memory, the token is spent and the
// certificate issued under the CA lock (ca.CA.Enroll), and the bundle is
// sent: a PKCS#12 file (modern or compat) or an Apple configuration
// profile, signed with serve's HTTPS certificate when there is one. A
// browser's form (Accept: text/html) gets the PKCS#12 in a page that says
// what comes next and saves the file from a data: link; a program, and
// every Apple profile, get the file itself. The key is never written
// anywhere, and the bundle leaves the server in that one answer only. Unknown, expired, cancelled, used and
// failed links all answer 404 alike.
//
// Every answer carries the headers of SetHeaders (never cached, a strict
// CSP, a referrer for serve itself only); the form's POST must come from
// the page's origin and carry its CSRF token. Requests are limited per
// source address (an IPv6 /64 counts as one) and in total, and the log
// never holds a token, a password or a key. See docs/enrollment.md for
// the flow and its threat model.
//
// It works over package ca (links, issuance) and package formats (the
// bundles). cmd/minica makes the Enroller for `serve --enroll` and hands
// it to package serve as serve.Config.Enroll.
package enroll

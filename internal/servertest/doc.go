// Package servertest holds the tests that run the configurations printed by
// `minica config nginx|apache|haproxy` in the real servers (the Debian
// packages nginx, apache2 and haproxy), with curl as the client and a Go
// upstream that echoes the headers it receives; the command of the CRL
// fetch job of `minica config crl-fetch` against those servers, following
// `minica serve`; a CA hierarchy (a root and two intermediates) in those
// servers, `minica proxy`, `openssl verify -crl_check_all` and `minica
// verify`, with revocations at both levels and a rotation's overlap;
// `minica proxy --crl URL` following a CRL that nginx
// serves as a static file (conditional GETs answered 304, a revocation
// picked up by polling); the units printed by `minica config
// systemd|systemd-proxy|systemd-serve|crl-fetch` with systemd-analyze
// verify; and `minica proxy --policy` in front of Debian's Tomcat 10 (the
// package tomcat10, run as the user nobody when the tests run as root),
// whose protected pages no spelling of their path with a path parameter
// reaches.
//
// The tests are behind the interop build tag:
//
//	go test -tags interop ./internal/servertest/
//
// They fail, naming the Debian package, when a server, curl or
// systemd-analyze is missing. Each server runs in the foreground on
// 127.0.0.1 with its pid, logs and temporary files in the test's temporary
// directory, and is killed when the test ends.
package servertest

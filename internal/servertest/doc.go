// Package servertest holds the tests that run the configurations printed by
// `minica config nginx|apache|haproxy` in the real servers (the Debian
// packages nginx, apache2 and haproxy), with curl as the client and a Go
// upstream that echoes the headers it receives; and the units printed by
// `minica config systemd|systemd-proxy` with systemd-analyze verify; and
// `minica proxy --crl URL` following a CRL that nginx serves as a static
// file (conditional GETs answered 304, a revocation picked up by polling).
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

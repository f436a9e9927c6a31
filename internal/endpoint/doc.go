// Package endpoint reads the two address forms minica's front ends share:
// where to accept clients ([ParseListen]: PORT, :PORT or HOST:PORT) and
// where to forward them ([ParseUpstream]: an http or https URL, a unix
// socket, or HOST:PORT).
//
// `minica proxy`, `minica serve`, `minica echo`, a proxy's policy file and
// `minica config` all read their addresses here, so that one string means
// the same to each. The checks that depend on the reader (a port range, a
// scheme a server's configuration cannot forward to) are the caller's.
// Errors start with the quoted input, so that a caller can put the flag or
// field name before it.
package endpoint

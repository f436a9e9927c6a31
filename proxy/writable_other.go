//go:build !unix

package proxy

import "net"

// waitWritable returns nil at once where poll(2) is not available: the
// write tries again at once, and goes on as soon as a byte fits.
func waitWritable(net.Conn) error { return nil }

//go:build !unix

package proxy

import "net"

// canCheckIdle says whether idleClean works here: not on this platform,
// where every request goes through net/http's Transport.
const canCheckIdle = false

func idleClean(net.Conn) bool { return false }

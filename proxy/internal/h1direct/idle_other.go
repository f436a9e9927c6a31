//go:build !unix

package h1direct

import "net"

// canCheckIdle says whether idleClean works here: not on this platform,
// where every request goes through net/http's Transport.
const canCheckIdle = false

type idleCheck struct{}

func newIdleCheck(net.Conn) *idleCheck { return &idleCheck{} }

func (*idleCheck) idleClean() bool { return false }

//go:build !unix

package main

import "time"

// cpuTime is 0 where getrusage is missing: the load client's CPU is then
// not reported.
func cpuTime() time.Duration { return 0 }

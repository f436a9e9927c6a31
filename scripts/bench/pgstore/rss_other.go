//go:build !unix

package main

import "os"

// maxRSSKiB is 0 where getrusage is missing: the peak RSS is then not
// reported.
func maxRSSKiB(*os.ProcessState) int64 { return 0 }

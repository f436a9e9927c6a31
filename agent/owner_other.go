//go:build !unix

package agent

import "io/fs"

// fileOwner reports no owner where files have no numeric owner and group
// (Windows): a replacement keeps the mode only.
func fileOwner(fs.FileInfo) (uid, gid int, ok bool) { return 0, 0, false }

//go:build unix

package store

import (
	"io/fs"
	"syscall"
)

// inodeOf returns the inode number of the file info describes.
func inodeOf(info fs.FileInfo) uint64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}

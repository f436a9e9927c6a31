//go:build !unix

package store

import "io/fs"

// inodeOf returns 0 where stat has no inode number: a FileStamp then tells
// versions apart by size and modification time alone.
func inodeOf(fs.FileInfo) uint64 { return 0 }

package cadir

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// SyncFS makes every write to the file system that holds the CA
// directory durable with one syncfs(2): one journal commit and one cache
// flush for a whole group, where an fsync per file and directory costs one
// each. It reports false when the call is not available, and the caller
// then syncs file by file.
func (d *Dir) SyncFS() (bool, error) {
	f, err := d.root.Open(".")
	if err != nil {
		return true, fmt.Errorf("opening %q: %w", d.Path(), err)
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		if err == unix.ENOSYS {
			return false, nil
		}
		return true, &os.PathError{Op: "syncfs", Path: d.Path(), Err: err}
	}
	return true, nil
}

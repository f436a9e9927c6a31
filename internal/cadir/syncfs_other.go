//go:build !linux

package cadir

// SyncFS reports false: only Linux has syncfs(2), so the caller syncs file
// by file.
func (d *Dir) SyncFS() (bool, error) { return false, nil }

//go:build !linux

package file

import "context"

// CRLNotifications is nil where inotify is not: readers poll.
func (s *Store) CRLNotifications(ctx context.Context) <-chan struct{} { return nil }

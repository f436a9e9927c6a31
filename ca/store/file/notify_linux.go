package file

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"

	"minica/ca/store"
)

// CRLNotifications watches the CA directory with inotify: the channel
// receives a value soon after any process moves a new crl.der or
// crl-delta.der into place or writes to the revocation log, so that serve
// hears of a `minica revoke` at once instead of at its next poll. It is nil (the caller
// polls) when inotify is not available. The watch ends with ctx.
func (s *Store) CRLNotifications(ctx context.Context) <-chan struct{} {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil
	}
	watched := map[int32][]string{} // watch descriptor -> the file names it is for
	for dir, names := range map[string][]string{
		".":                     {store.CRLDERFile, store.DeltaCRLDERFile},
		path.Dir(RevocationLog): {path.Base(RevocationLog)},
	} {
		wd, err := unix.InotifyAddWatch(fd, filepath.Join(s.dir.Path(), dir), unix.IN_MOVED_TO|unix.IN_CLOSE_WRITE|unix.IN_MODIFY)
		if err != nil {
			unix.Close(fd)
			return nil
		}
		watched[int32(wd)] = names
	}
	// A non-blocking descriptor in an *os.File waits in the runtime's
	// poller, and Close wakes the Read.
	f := os.NewFile(uintptr(fd), "inotify")
	ch := make(chan struct{}, 1)
	go func() {
		<-ctx.Done()
		f.Close()
	}()
	go func() {
		buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
		for {
			n, err := f.Read(buf)
			if err != nil {
				return
			}
			if concerns(buf[:n], watched) {
				select {
				case ch <- struct{}{}:
				default:
				}
			}
		}
	}()
	return ch
}

// concerns reports whether the inotify events in buf name a watched file.
func concerns(buf []byte, watched map[int32][]string) bool {
	for len(buf) >= unix.SizeofInotifyEvent {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[0]))
		end := unix.SizeofInotifyEvent + int(ev.Len)
		if end > len(buf) {
			return false
		}
		name := string(buf[unix.SizeofInotifyEvent:end])
		for len(name) > 0 && name[len(name)-1] == 0 {
			name = name[:len(name)-1]
		}
		if ev.Mask&unix.IN_Q_OVERFLOW != 0 || (name != "" && slices.Contains(watched[ev.Wd], name)) {
			return true
		}
		buf = buf[end:]
	}
	return false
}

package cadir

import (
	"errors"
	"io/fs"
	"os"
	"slices"
	"syscall"

	"minica/internal/regfile"
)

// Scanner reads the small files of one directory (the records of a shard)
// with the fewest system calls: openat relative to the directory, read and
// close, without the file descriptor bookkeeping of os.File (a poller
// registration that fails for regular files, and fcntl calls), which costs
// more than the read itself when a million small files are read. The
// names are plain file names of the directory listing, opened with
// O_NOFOLLOW, so nothing outside the directory can be reached, as with
// os.Root.
type Scanner struct {
	dir *os.File
	fd  int
}

// OpenScanner opens the directory root for a scan.
func OpenScanner(root *os.Root) (*Scanner, error) {
	dir, err := root.Open(".")
	if err != nil {
		return nil, err
	}
	return &Scanner{dir: dir, fd: int(dir.Fd())}, nil
}

// Close releases the directory.
func (s *Scanner) Close() { s.dir.Close() }

// Names lists the directory's names in order without a stat per entry.
func (s *Scanner) Names() ([]string, error) {
	names, err := s.dir.Readdirnames(-1)
	slices.Sort(names)
	return names, err
}

// Read appends the content of name to buf, reusing its capacity.
func (s *Scanner) Read(name string, buf []byte) ([]byte, error) {
	// O_NONBLOCK and the fstat after: a FIFO planted as a record would
	// make open and read wait for ever (see package regfile).
	fd, err := openNoAtime(func(flag int) (int, error) {
		for {
			fd, err := syscall.Openat(s.fd, name, flag|syscall.O_NONBLOCK|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
			if !errors.Is(err, syscall.EINTR) {
				return fd, err
			}
		}
	})
	if err != nil {
		return buf, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return buf, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return buf, regfile.NotRegular(fileType(st.Mode)) // the caller names the path
	}
	for {
		buf = growBuf(buf)
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return buf, &fs.PathError{Op: "read", Path: name, Err: err}
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// fileType is the type bits of a stat mode as an fs.FileMode.
func fileType(mode uint32) fs.FileMode {
	switch mode & syscall.S_IFMT {
	case syscall.S_IFIFO:
		return fs.ModeNamedPipe
	case syscall.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFBLK:
		return fs.ModeDevice
	case syscall.S_IFSOCK:
		return fs.ModeSocket
	case syscall.S_IFDIR:
		return fs.ModeDir
	case syscall.S_IFLNK:
		return fs.ModeSymlink
	}
	return fs.ModeIrregular
}

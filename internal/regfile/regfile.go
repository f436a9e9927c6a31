// Package regfile opens files that must be regular files without waiting
// on anything else. A FIFO planted in the place of a state file (crl.der,
// a record, the revocation log) makes a plain open(2) for reading wait for
// a writer, and a read of it wait for data, for ever; a device could hand
// out endless bytes. Open asks for O_NONBLOCK where the system has it, so
// that opening returns at once whatever the file is, and refuses what
// fstat(2) then says is not a regular file; the caller names the path, as
// it does for every other error of reading it.
package regfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrNotRegular is the error of Open and ReadFile for a file that is not a
// regular file.
var ErrNotRegular = errors.New("not a regular file")

// Open opens a file for reading by open, which is given the flags to open
// with (os.O_RDONLY, and O_NONBLOCK where there is one), and returns it
// when it is a regular file. Otherwise it closes it and returns an error
// wrapping ErrNotRegular that names the file's type (see Check). The file
// is never read before that check.
func Open(open func(flag int) (*os.File, error)) (*os.File, error) {
	f, _, err := OpenInfo(open)
	return f, err
}

// OpenInfo is Open that also returns the FileInfo of the check, for a
// caller that needs the file's size.
func OpenInfo(open func(flag int) (*os.File, error)) (*os.File, fs.FileInfo, error) {
	f, err := open(os.O_RDONLY | oNonBlock)
	if err != nil {
		return nil, nil, err
	}
	info, err := check(f)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, info, nil
}

// Check returns an error wrapping ErrNotRegular that names the file's type
// ("not a regular file (a FIFO)") unless f is a regular file.
func Check(f *os.File) error {
	_, err := check(f)
	return err
}

func check(f *os.File) (fs.FileInfo, error) {
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, NotRegular(info.Mode())
	}
	return info, nil
}

// NotRegular is the error of Check for a file of mode m, for a caller that
// stats a file itself.
func NotRegular(m fs.FileMode) error {
	return fmt.Errorf("%w (%s)", ErrNotRegular, typeName(m))
}

// ReadFile is os.ReadFile for a file that must be regular (see Open); its
// errors are *fs.PathError, as os.ReadFile's.
func ReadFile(name string) ([]byte, error) {
	f, err := Open(func(flag int) (*os.File, error) { return os.OpenFile(name, flag, 0) })
	if errors.Is(err, ErrNotRegular) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf []byte
	if info, err := f.Stat(); err == nil {
		buf = make([]byte, 0, info.Size()+1) // +1: the read that finds the end
	}
	for {
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, &fs.PathError{Op: "read", Path: name, Err: err}
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
	}
}

// typeName names the type of a file that is not regular.
func typeName(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "type " + m.Type().String()
}

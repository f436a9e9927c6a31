package file

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"

	"minica/internal/cadir"
	"minica/internal/regfile"
)

// An ACME object's file is a log of its states: objectMagic, then one
// frame per state (its length and CRC-32C, 4 bytes each, big-endian, then
// the data); the last whole frame is current. A Volatile PutObject appends
// a frame to the file instead of replacing it, so that no file is created
// or removed: under the ACME server's load, ext4 spent most of serve's CPU
// allocating inodes past the many it had just freed. A frame torn by a
// crash, or being appended while a reader reads, fails its length or its
// CRC and is ignored: readers see the previous state, as they would the
// previous file of a rename. A file that would grow past compactAt is
// written anew (atomically, through a temporary file) with the new state
// alone. A file without objectMagic is the object's data itself, as an
// earlier minica wrote it.
const (
	objectMagic = "minica object log 1\n"
	frameHeader = 8
	compactAt   = 16 << 10
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendFrame appends the frame of data to buf.
func appendFrame(buf, data []byte) []byte {
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(data)))
	buf = binary.BigEndian.AppendUint32(buf, crc32.Checksum(data, castagnoli))
	return append(buf, data...)
}

// encodeObject is the content of an object file holding data alone.
func encodeObject(data []byte) []byte {
	return appendFrame(append(make([]byte, 0, len(objectMagic)+frameHeader+len(data)), objectMagic...), data)
}

// errNoWholeState is decodeObject's error for a log without a whole frame.
var errNoWholeState = errors.New("holds no whole state")

// decodeObject returns the current state of an object file's content b:
// the data of its last whole frame, or b itself when b is not a log.
func decodeObject(b []byte) ([]byte, error) {
	if !isLog(b) {
		return b, nil
	}
	if last, _ := lastFrame(b); last != nil {
		if data, ok := checkFrame(last); ok {
			return data, nil // the usual case, found without a list of the frames
		}
	}
	frames, _ := splitFrames(b)
	for i := len(frames) - 1; i >= 0; i-- {
		if data, ok := checkFrame(frames[i]); ok {
			return data, nil
		}
	}
	return nil, errNoWholeState
}

func isLog(b []byte) bool {
	return len(b) >= len(objectMagic) && string(b[:len(objectMagic)]) == objectMagic
}

// nextFrame splits the first frame off rest, by its length; ok is false
// when rest holds no whole frame: its end, or the tail of a torn or
// unfinished append.
func nextFrame(rest []byte) (frame, after []byte, ok bool) {
	if len(rest) < frameHeader {
		return nil, rest, false
	}
	n := binary.BigEndian.Uint32(rest)
	if uint64(len(rest)-frameHeader) < uint64(n) {
		return nil, rest, false
	}
	return rest[:frameHeader+int(n)], rest[frameHeader+int(n):], true
}

// splitFrames splits the frames of log b by their lengths, and reports
// whether they end where b does.
func splitFrames(b []byte) (frames [][]byte, whole bool) {
	rest := b[len(objectMagic):]
	for f, after, ok := nextFrame(rest); ok; f, after, ok = nextFrame(rest) {
		frames, rest = append(frames, f), after
	}
	return frames, len(rest) == 0
}

// lastFrame returns the last whole frame of log b (nil when there is
// none), and whether the frames end where b does.
func lastFrame(b []byte) (last []byte, whole bool) {
	rest := b[len(objectMagic):]
	for f, after, ok := nextFrame(rest); ok; f, after, ok = nextFrame(rest) {
		last, rest = f, after
	}
	return last, len(rest) == 0
}

// checkFrame returns a frame's data and whether its CRC holds.
func checkFrame(f []byte) ([]byte, bool) {
	data := f[frameHeader:]
	return data, crc32.Checksum(data, castagnoli) == binary.BigEndian.Uint32(f[4:])
}

// appendable reports whether a frame may be appended to the log b: every
// frame whole, the last one's CRC holding. After a torn append the next
// frame would be read as the torn one's rest.
func appendable(b []byte) bool {
	if !isLog(b) {
		return false
	}
	last, whole := lastFrame(b)
	if !whole || last == nil {
		return false
	}
	_, ok := checkFrame(last)
	return ok
}

// appendObject makes data the current state of the object file name in d
// without syncing: a frame appended to its log, or, for a file that is
// missing, not yet a log, torn at its end, or about to outgrow compactAt,
// a new file renamed over it.
func appendObject(d *cadir.Dir, name string, data []byte) error {
	f, err := d.Root().OpenFile(name, os.O_RDWR|os.O_APPEND, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return replaceLazily(d, name, encodeObject(data))
	}
	if err != nil {
		return fmt.Errorf("opening %q: %w", d.Join(name), err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("reading %q: %w", d.Join(name), err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%q: %w", d.Join(name), regfile.NotRegular(st.Mode()))
	}
	if st.Size()+int64(frameHeader+len(data)) > compactAt {
		return replaceLazily(d, name, encodeObject(data))
	}
	log := make([]byte, st.Size())
	if n, _ := f.ReadAt(log, 0); n < len(log) || !appendable(log) {
		return replaceLazily(d, name, encodeObject(data))
	}
	if _, err := f.Write(appendFrame(make([]byte, 0, frameHeader+len(data)), data)); err != nil {
		return fmt.Errorf("appending to %q: %w", d.Join(name), err)
	}
	return nil
}

package file

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"minica/ca/store"
	"os"
	"slices"
)

// RevocationLog is the revocation log: one JSON line per revocation event,
// appended and synced before the record changes. The CRL is built from it
// alone, so publishing costs in proportion to the revocations, not to the
// size of the database.
const RevocationLog = "db/revoked.log"

// AppendRevocations appends events to the log in one write and syncs it.
// The append lands whole or not at all: when a write or sync fails (a full
// disk, say) the log is cut back to where it ended, so that the next
// append does not run on from half a line. An unfinished last line left by
// a crash, which no one was told had landed, is cut off first.
func (s *Store) AppendRevocations(events ...store.RevEvent) error {
	var line []byte
	for _, ev := range events {
		b, _ := json.Marshal(ev) // a store.RevEvent always marshals
		line = append(append(line, b...), '\n')
	}
	f, err := s.dir.Root().OpenFile(RevocationLog, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("opening revocation log %q: %w", s.dir.Join(RevocationLog), err)
	}
	defer f.Close()
	var lf LogFile = f
	if s.wrapLog != nil {
		lf = s.wrapLog(lf)
	}
	if err := appendLine(lf, line, func() error { return s.dir.SyncDir("db") }); err != nil {
		return fmt.Errorf("appending to revocation log %q: %w", s.dir.Join(RevocationLog), err)
	}
	return nil
}

// RevokeRecords appends the events of rs to the log in one append, then
// replaces each record.
func (s *Store) RevokeRecords(rs []*store.Record) error {
	events := make([]store.RevEvent, len(rs))
	for i, r := range rs {
		events[i] = store.EventOf(r)
	}
	if err := s.AppendRevocations(events...); err != nil {
		return err
	}
	for _, r := range rs {
		if err := s.PutRecord(r); err != nil {
			return err
		}
	}
	return nil
}

// LogFile is what an append needs of the revocation log; *os.File has it.
type LogFile interface {
	io.ReaderAt
	io.WriterAt
	Stat() (fs.FileInfo, error)
	Truncate(size int64) error
	Sync() error
}

// appendLine writes line after the last newline of f, syncs it and calls
// synced (which syncs the directory). On any failure it truncates f back to
// that newline, so that f holds only the whole lines it held before.
func appendLine(f LogFile, line []byte, synced func() error) error {
	info, err := f.Stat()
	if err != nil {
		return err
	}
	end, err := wholeLinesEnd(f, info.Size())
	if err != nil {
		return err
	}
	if end != info.Size() {
		if err := f.Truncate(end); err != nil {
			return fmt.Errorf("cutting off an unfinished last line: %w", err)
		}
	}
	_, err = f.WriteAt(line, end)
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = synced()
	}
	if err == nil {
		return nil
	}
	if terr := f.Truncate(end); terr != nil {
		return fmt.Errorf("%w; cutting the partial line off failed too (%v), so the log ends in a partial line (%w)", err, terr, store.ErrCorruptRevocationLog)
	}
	if serr := f.Sync(); serr != nil {
		return fmt.Errorf("%w; syncing the log after cutting the partial line off failed too (%v)", err, serr)
	}
	return err
}

// wholeLinesEnd returns the offset just after the last newline among the
// first size bytes of f (0 if there is none).
func wholeLinesEnd(f io.ReaderAt, size int64) (int64, error) {
	var buf [512]byte
	for end := size; end > 0; {
		start := max(end-int64(len(buf)), 0)
		chunk := buf[:end-start]
		if _, err := f.ReadAt(chunk, start); err != nil {
			return 0, fmt.Errorf("reading the end of the log: %w", err)
		}
		if i := bytes.LastIndexByte(chunk, '\n'); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return 0, nil
}

// LatestRevocations reads the log. A last line without its newline is what
// an interrupted append leaves: it is ignored (Check removes it).
func (s *Store) LatestRevocations() ([]store.LogEvent, error) {
	f, err := s.dir.Open(RevocationLog)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("opening revocation log %q: %w", s.dir.Join(RevocationLog), err)
	}
	defer f.Close()
	var events []store.LogEvent
	if info, err := f.Stat(); err == nil {
		// Lines are about 130 bytes: allocate once for the usual log.
		events = make([]store.LogEvent, 0, info.Size()/128+1)
	}
	r := bufio.NewReaderSize(f, 64<<10)
	for n := 1; ; n++ {
		line, err := r.ReadSlice('\n')
		if err == io.EOF {
			break
		}
		if err == bufio.ErrBufferFull {
			return nil, fmt.Errorf("%w %q: line %d is too long", store.ErrCorruptRevocationLog, s.dir.Join(RevocationLog), n)
		}
		if err != nil {
			return nil, fmt.Errorf("reading revocation log %q: %w", s.dir.Join(RevocationLog), err)
		}
		ev, err := parseLogEvent(line)
		if errors.Is(err, store.ErrBadEvent) || n > math.MaxUint32 {
			return nil, fmt.Errorf("%w %q: line %d", store.ErrCorruptRevocationLog, s.dir.Join(RevocationLog), n)
		}
		if err != nil {
			return nil, fmt.Errorf("%w %q: line %d: %w", store.ErrCorruptRevocationLog, s.dir.Join(RevocationLog), n, err)
		}
		ev.Line = uint32(n)
		events = append(events, ev)
	}
	// Latest event per serial: equal serials sort in log order.
	slices.SortFunc(events, func(a, b store.LogEvent) int {
		if c := bytes.Compare(a.Serial[:], b.Serial[:]); c != 0 {
			return c
		}
		return cmp.Compare(a.Line, b.Line)
	})
	out := events[:0]
	for i, ev := range events {
		if i+1 == len(events) || events[i+1].Serial != ev.Serial {
			out = append(out, ev)
		}
	}
	return out, nil
}

// eventStart begins every line appendRevEvent writes, and nothing inside one.
var eventStart = []byte(`{"serial":"`)

// repairRevlog removes from the revocation log what interrupted appends
// left, reporting each repair through fixed (and what it cannot repair
// through problem). The rule: an append is acknowledged
// only once its whole line, newline included, is synced, and only then is
// the record changed. So
//
//   - bytes after the last newline were never acknowledged: they go;
//   - in a line that ends in a whole entry, whatever precedes that entry's
//     start is the beginning of earlier appends that never reached their
//     newline (before appends were cut back on failure, the next one ran
//     on after them): it goes, the entry stays;
//   - an empty line holds nothing: it goes;
//   - any other undecodable line that names the serial of a record is
//     replaced, at the end of the log, by the state of that record, which
//     was written after every acknowledged append of that serial;
//   - a line naming no record is reported, and kept.
func (s *Store) repairRevlog(fixed, problem func(string)) error {
	f, err := s.dir.Open(RevocationLog)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("opening revocation log %q: %w", s.dir.Join(RevocationLog), err)
	}
	defer f.Close()
	fixes := map[int][]byte{} // line number: what replaces it (nil: nothing)
	var relog []*store.Record
	tail := false
	err = eachLogLine(f, s.dir.Join(RevocationLog), func(n int, line []byte, last bool) error {
		if last {
			tail = true
			fixed("dropped the unfinished last line of the revocation log")
			return nil
		}
		if _, err := parseLogEvent(line); err == nil {
			return nil
		}
		if len(bytes.TrimSpace(line)) == 0 {
			fixes[n] = nil
			fixed(fmt.Sprintf("dropped the empty line %d of the revocation log", n))
			return nil
		}
		i := bytes.LastIndex(line, eventStart)
		if i > 0 {
			if _, err := parseLogEvent(line[i:]); err == nil {
				fixes[n] = slices.Clone(line[i:])
				fixed(fmt.Sprintf("dropped the unfinished start of an entry (an interrupted append) from line %d of the revocation log", n))
				return nil
			}
		}
		if rec := s.recordNamedBy(line, i); rec != nil {
			fixes[n] = nil
			relog = append(relog, rec)
			fixed(fmt.Sprintf("replaced the damaged line %d of the revocation log with the state of the record of %s (serial %s)", n, rec.Name, rec.Serial))
			return nil
		}
		problem(fmt.Sprintf("line %d of the revocation log %q is damaged and names no certificate of this CA: correct or remove it by hand", n, s.dir.Join(RevocationLog)))
		return nil
	})
	if errors.Is(err, store.ErrCorruptRevocationLog) {
		problem(err.Error())
		return nil
	}
	if err != nil || (len(fixes) == 0 && !tail) {
		return err
	}
	return s.dir.WriteAtomicFrom(RevocationLog, 0o644, func(w io.Writer) error {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		bw := bufio.NewWriterSize(w, 64<<10)
		err := eachLogLine(f, s.dir.Join(RevocationLog), func(n int, line []byte, last bool) error {
			if fix, ok := fixes[n]; ok {
				line = fix
			}
			if last {
				line = nil
			}
			_, err := bw.Write(line)
			return err
		})
		for _, rec := range relog {
			line, _ := json.Marshal(store.EventOf(rec))
			bw.Write(append(line, '\n'))
		}
		if err != nil {
			return err
		}
		return bw.Flush()
	})
}

// eachLogLine calls fn with every line of r, numbered from 1, newline
// included; last marks bytes after the last newline. name is for messages.
func eachLogLine(r io.Reader, name string, fn func(n int, line []byte, last bool) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		switch {
		case err == io.EOF:
			if len(line) > 0 {
				return fn(n, line, true)
			}
			return nil
		case err == bufio.ErrBufferFull:
			return fmt.Errorf("%w %q: line %d is too long", store.ErrCorruptRevocationLog, name, n)
		case err != nil:
			return fmt.Errorf("reading revocation log %q: %w", name, err)
		}
		if err := fn(n, line, false); err != nil {
			return err
		}
	}
}

// recordNamedBy returns the record of the serial that starts at line[i:]
// after eventStart, or nil.
func (s *Store) recordNamedBy(line []byte, i int) *store.Record {
	if i < 0 || len(line[i+len(eventStart):]) < 32 {
		return nil
	}
	serial := string(line[i+len(eventStart):][:32])
	if !store.IsSerialHex(serial) {
		return nil
	}
	rec, err := s.Record(serial)
	if err != nil || rec.Serial != serial {
		return nil
	}
	return rec
}

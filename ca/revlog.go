package ca

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
	"os"
	"slices"
	"time"
)

// revlogFile is the revocation log: one JSON line per revocation event,
// appended and synced before the record changes. The CRL is built from it
// alone, so publishing costs in proportion to the revocations, not to the
// size of the database.
const revlogFile = "db/revoked.log"

// revEvent is one line of the revocation log. Lifted marks the end of a
// certificateHold (removeFromCRL); the latest line of a serial wins.
type revEvent struct {
	Serial    string    `json:"serial"`
	RevokedAt time.Time `json:"revoked_at,omitzero"`
	Reason    string    `json:"reason,omitempty"`
	NotAfter  time.Time `json:"not_after,omitzero"`
	Lifted    bool      `json:"lifted,omitempty"`
}

func eventOf(r *Record) revEvent {
	if r.Status != StatusRevoked {
		return revEvent{Serial: r.Serial, Lifted: true}
	}
	return revEvent{Serial: r.Serial, RevokedAt: r.RevokedAt, Reason: r.Reason, NotAfter: r.NotAfter}
}

// appendRevEvent appends one event to the log and syncs it.
func (c *CA) appendRevEvent(ev revEvent) error {
	line, _ := json.Marshal(ev) // a revEvent always marshals
	f, err := c.dir.root.OpenFile(revlogFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("opening revocation log %q: %w", c.dir.Join(revlogFile), err)
	}
	defer f.Close()
	if _, err := f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("appending to revocation log %q: %w", c.dir.Join(revlogFile), err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("syncing revocation log %q: %w", c.dir.Join(revlogFile), err)
	}
	return c.dir.SyncDir("db")
}

// revokedState returns the latest event of every serial that the log
// holds revoked now, in serial order.
func (c *CA) revokedState() ([]logEvent, error) {
	events, err := c.latestLogEvents()
	return slices.DeleteFunc(events, func(ev logEvent) bool { return ev.lifted }), err
}

// latestRevEvents returns the latest event of every serial, in serial
// order, as the log's JSON form.
func (c *CA) latestRevEvents() ([]revEvent, error) {
	events, err := c.latestLogEvents()
	if err != nil {
		return nil, err
	}
	out := make([]revEvent, len(events))
	for i := range events {
		out[i] = events[i].revEvent()
	}
	return out, nil
}

// latestLogEvents reads the log and returns the latest event of every
// serial, in serial order. A last line without its newline is what an
// interrupted append leaves: it is ignored (Check removes it).
func (c *CA) latestLogEvents() ([]logEvent, error) {
	f, err := c.dir.root.Open(revlogFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("opening revocation log %q: %w", c.dir.Join(revlogFile), err)
	}
	defer f.Close()
	var events []logEvent
	if info, err := f.Stat(); err == nil {
		// Lines are about 130 bytes: allocate once for the usual log.
		events = make([]logEvent, 0, info.Size()/128+1)
	}
	r := bufio.NewReaderSize(f, 64<<10)
	for n := 1; ; n++ {
		line, err := r.ReadSlice('\n')
		if err == io.EOF {
			break
		}
		if err == bufio.ErrBufferFull {
			return nil, fmt.Errorf("corrupt revocation log %q: line %d is too long", c.dir.Join(revlogFile), n)
		}
		if err != nil {
			return nil, fmt.Errorf("reading revocation log %q: %w", c.dir.Join(revlogFile), err)
		}
		ev, err := parseLogEvent(line)
		if errors.Is(err, errBadEvent) || n > math.MaxUint32 {
			return nil, fmt.Errorf("corrupt revocation log %q: line %d", c.dir.Join(revlogFile), n)
		}
		if err != nil {
			return nil, fmt.Errorf("corrupt revocation log %q: line %d: %w", c.dir.Join(revlogFile), n, err)
		}
		ev.line = uint32(n)
		events = append(events, ev)
	}
	// Latest event per serial: equal serials sort in log order.
	slices.SortFunc(events, func(a, b logEvent) int {
		if c := bytes.Compare(a.serial[:], b.serial[:]); c != 0 {
			return c
		}
		return cmp.Compare(a.line, b.line)
	})
	out := events[:0]
	for i, ev := range events {
		if i+1 == len(events) || events[i+1].serial != ev.serial {
			out = append(out, ev)
		}
	}
	return out, nil
}

// truncatePartialRevEvent drops an unterminated last line of the log and
// reports whether there was one.
func (c *CA) truncatePartialRevEvent() (bool, error) {
	data, err := c.dir.ReadFile(revlogFile)
	if errors.Is(err, fs.ErrNotExist) || len(data) == 0 || data[len(data)-1] == '\n' {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	keep := data[:bytes.LastIndexByte(data, '\n')+1]
	return true, c.dir.WriteAtomic(revlogFile, keep, 0o644)
}

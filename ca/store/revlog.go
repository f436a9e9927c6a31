package store

import (
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"minica/revoke"
)

// ErrCorruptRevocationLog is returned when an event of the revocation log
// does not decode; the file store's Repair repairs what interrupted
// appends leave.
var ErrCorruptRevocationLog = errors.New("corrupt revocation log")

// RevEvent is one event of the revocation log, in the JSON form of a line
// of the file store's log. Lifted marks the end of a
// certificateHold (removeFromCRL); the latest line of a serial wins.
type RevEvent struct {
	Serial    string    `json:"serial"`
	RevokedAt time.Time `json:"revoked_at,omitzero"`
	Reason    string    `json:"reason,omitempty"`
	NotAfter  time.Time `json:"not_after,omitzero"`
	Lifted    bool      `json:"lifted,omitempty"`
}

// EventOf is the event that records r's revocation state: revoked, or
// lifted (the end of a certificateHold) otherwise.
func EventOf(r *Record) RevEvent {
	if r.Status != StatusRevoked {
		return RevEvent{Serial: r.Serial, Lifted: true}
	}
	return RevEvent{Serial: r.Serial, RevokedAt: r.RevokedAt, Reason: r.Reason, NotAfter: r.NotAfter}
}

// LogEvent is a revocation log line in 40 bytes: a CRL of a million entries
// reads a million of them, which as RevEvent values would take 130 MB.
// Times are Unix seconds; the CRL holds no finer ones.
type LogEvent struct {
	Serial    [16]byte
	RevokedAt int64
	NotAfter  int64
	Line      uint32 // position in the log: the latest line of a serial wins
	Reason    uint8  // a revoke.Reason
	Lifted    bool
}

// Hex returns the serial as records name it.
func (ev *LogEvent) Hex() string { return hex.EncodeToString(ev.Serial[:]) }

// RevEvent returns ev in the log's JSON form.
func (ev *LogEvent) RevEvent() RevEvent {
	if ev.Lifted {
		return RevEvent{Serial: ev.Hex(), Lifted: true}
	}
	return RevEvent{Serial: ev.Hex(), RevokedAt: UnixTime(ev.RevokedAt), Reason: revoke.Reason(ev.Reason).String(), NotAfter: UnixTime(ev.NotAfter)}
}

// UnixTime is the inverse of Time.Unix, in UTC: the zero Time stays zero.
func UnixTime(sec int64) time.Time { return time.Unix(sec, 0).UTC() }

// ErrBadEvent is returned by CompactEvent for what is no revocation event.
var ErrBadEvent = errors.New("not a revocation event")

// CompactEvent checks a decoded line and returns it as a LogEvent.
func CompactEvent(je RevEvent) (LogEvent, error) {
	var ev LogEvent
	if len(je.Serial) != 32 {
		return ev, ErrBadEvent
	}
	if _, err := hex.Decode(ev.Serial[:], []byte(je.Serial)); err != nil || ev.Serial == [16]byte{} {
		return ev, fmt.Errorf("invalid serial %q", je.Serial)
	}
	if je.Lifted {
		ev.Lifted = true
		return ev, nil
	}
	reason, err := revoke.ParseReason(je.Reason)
	if err != nil {
		return ev, fmt.Errorf("serial %s: %w", je.Serial, err)
	}
	ev.Reason, ev.RevokedAt, ev.NotAfter = uint8(reason), je.RevokedAt.Unix(), je.NotAfter.Unix()
	return ev, nil
}

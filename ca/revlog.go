package ca

import (
	"minica/ca/store"
	"slices"
	"time"
)

// ErrCorruptRevocationLog is returned when a line of the revocation log does
// not decode; Check repairs what interrupted appends leave.
var ErrCorruptRevocationLog = store.ErrCorruptRevocationLog

type (
	revEvent = store.RevEvent
	logEvent = store.LogEvent
)

func eventOf(r *Record) revEvent { return store.EventOf(r) }

// appendRevEvent appends one event to the revocation log, durably.
func (c *CA) appendRevEvent(ev revEvent) error { return c.db.AppendRevocations(ev) }

// revokedState returns the latest event of every serial that the log
// holds revoked now, in serial order.
func (c *CA) revokedState() ([]logEvent, error) {
	events, err := c.latestLogEvents()
	return slices.DeleteFunc(events, func(ev logEvent) bool { return ev.Lifted }), err
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
		out[i] = events[i].RevEvent()
	}
	return out, nil
}

// latestLogEvents returns the latest event of every serial, in serial
// order.
func (c *CA) latestLogEvents() ([]logEvent, error) { return c.db.LatestRevocations() }

// unixTime is the inverse of Time.Unix, in UTC.
func unixTime(sec int64) time.Time { return store.UnixTime(sec) }

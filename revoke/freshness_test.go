package revoke_test

import (
	"testing"
	"time"

	"minica/revoke"
)

func TestFreshness(t *testing.T) {
	this := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	next := this.Add(7 * 24 * time.Hour) // half-life at 2030-01-04T12:00:00Z
	half := this.Add(next.Sub(this) / 2)
	for _, tt := range []struct {
		name string
		t    revoke.Thresholds
		now  time.Time
		want revoke.CRLState
	}{
		{name: "before thisUpdate", now: this.Add(-time.Nanosecond), want: revoke.NotYetValid},
		{name: "before thisUpdate, with grace", t: revoke.Thresholds{Grace: time.Hour}, now: this.Add(-time.Second), want: revoke.NotYetValid},
		{name: "at thisUpdate", now: this, want: revoke.Fresh},
		{name: "just before half-life", now: half.Add(-time.Nanosecond), want: revoke.Fresh},
		{name: "at half-life", now: half, want: revoke.DueSoon},
		{name: "past half-life", now: half.Add(time.Nanosecond), want: revoke.DueSoon},
		{name: "at nextUpdate", now: next, want: revoke.DueSoon},
		{name: "past nextUpdate", now: next.Add(time.Nanosecond), want: revoke.Expired},
		{name: "due soon threshold, outside", t: revoke.Thresholds{DueSoon: 72 * time.Hour}, now: next.Add(-72*time.Hour - time.Nanosecond), want: revoke.Fresh},
		{name: "due soon threshold, at", t: revoke.Thresholds{DueSoon: 72 * time.Hour}, now: next.Add(-72 * time.Hour), want: revoke.DueSoon},
		{name: "due soon threshold beyond the lifetime", t: revoke.Thresholds{DueSoon: 30 * 24 * time.Hour}, now: this, want: revoke.DueSoon},
		{name: "within grace", t: revoke.Thresholds{Grace: time.Hour}, now: next.Add(time.Minute), want: revoke.Grace},
		{name: "at the end of grace", t: revoke.Thresholds{Grace: time.Hour}, now: next.Add(time.Hour), want: revoke.Grace},
		{name: "past grace", t: revoke.Thresholds{Grace: time.Hour}, now: next.Add(time.Hour + time.Nanosecond), want: revoke.Expired},
		{name: "negative grace is none", t: revoke.Thresholds{Grace: -time.Hour}, now: next.Add(time.Nanosecond), want: revoke.Expired},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := revoke.Freshness(this, next, tt.t, tt.now)
			if got != tt.want {
				t.Errorf("Freshness(%s) = %q; want %q", tt.now.Format(time.RFC3339Nano), got, tt.want)
			}
			if usable := got != revoke.Expired && got != revoke.NotYetValid; got.Usable() != usable {
				t.Errorf("%q.Usable() = %v; want %v", got, got.Usable(), usable)
			}
		})
	}
}

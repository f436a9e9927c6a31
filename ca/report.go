package ca

import (
	"slices"
	"time"
)

// ReportWindows are the expiry windows a Report counts, in days.
var ReportWindows = []int{7, 30, 90}

// ReportRecent is how far back a Report looks for renewals and revocations.
const ReportRecent = 30 * 24 * time.Hour

// DefaultReportLimit is how many certificates a Report lists per section
// unless told otherwise.
const DefaultReportLimit = 50

// Report summarizes the issuance database at one instant: counts by status
// and profile, what expires soon, and what was renewed and revoked lately.
// It is built in one pass over the records (see ReportBuilder) and its
// memory is bounded by Limit, not by the number of records: each list keeps
// the Limit entries that matter most and counts the others.
type Report struct {
	At      time.Time
	Records int
	// Status counts records by their status at At; Profiles counts them
	// by profile and status.
	Status   map[Status]int
	Profiles map[Profile]map[Status]int
	// Expiring counts, per window of ReportWindows, the valid certificates
	// that expire within it, and NotRenewed those of them without a
	// successor.
	Expiring   []int
	NotRenewed []int
	// Soonest lists valid certificates expiring within the largest window,
	// soonest first, at most Limit.
	Soonest []ReportEntry
	// Renewals are the successors issued within ReportRecent, newest first,
	// at most Limit; RenewalCount counts them all.
	Renewals     []ReportEntry
	RenewalCount int
	// Revocations are the certificates revoked within ReportRecent, newest
	// first, at most Limit; RevocationCount counts them all.
	Revocations     []ReportEntry
	RevocationCount int
	Limit           int
}

// ReportEntry is one certificate in a Report list.
type ReportEntry struct {
	Name      string    `json:"name"`
	Serial    string    `json:"serial"`
	Profile   Profile   `json:"profile"`
	NotAfter  time.Time `json:"not_after"`
	IssuedAt  time.Time `json:"issued_at"`
	RenewalOf string    `json:"renewal_of,omitempty"`
	RenewedBy string    `json:"renewed_by,omitempty"`
	RevokedAt time.Time `json:"revoked_at,omitzero"`
	Reason    string    `json:"reason,omitempty"`
}

// ReportBuilder builds a Report from records added one at a time.
type ReportBuilder struct {
	r                         Report
	soonest, renewals, revoks topK
}

// NewReportBuilder starts a Report at instant at, listing at most limit
// certificates per section (DefaultReportLimit when limit <= 0).
func NewReportBuilder(at time.Time, limit int) *ReportBuilder {
	if limit <= 0 {
		limit = DefaultReportLimit
	}
	b := &ReportBuilder{r: Report{
		At: at, Limit: limit,
		Status: map[Status]int{}, Profiles: map[Profile]map[Status]int{},
		Expiring: make([]int, len(ReportWindows)), NotRenewed: make([]int, len(ReportWindows)),
	}}
	b.soonest = topK{limit: limit, less: func(a, b ReportEntry) bool { return a.NotAfter.Before(b.NotAfter) }}
	b.renewals = topK{limit: limit, less: func(a, b ReportEntry) bool { return a.IssuedAt.After(b.IssuedAt) }}
	b.revoks = topK{limit: limit, less: func(a, b ReportEntry) bool { return a.RevokedAt.After(b.RevokedAt) }}
	return b
}

// Add counts one record.
func (b *ReportBuilder) Add(rec *Record) {
	r := &b.r
	r.Records++
	st := rec.StatusAt(r.At)
	r.Status[st]++
	byStatus := r.Profiles[rec.Profile]
	if byStatus == nil {
		byStatus = map[Status]int{}
		r.Profiles[rec.Profile] = byStatus
	}
	byStatus[st]++
	entry := func() ReportEntry {
		return ReportEntry{Name: rec.Name, Serial: rec.Serial, Profile: rec.Profile, NotAfter: rec.NotAfter, IssuedAt: rec.IssuedAt,
			RenewalOf: rec.RenewalOf, RenewedBy: rec.RenewedBy, RevokedAt: rec.RevokedAt, Reason: rec.Reason}
	}
	if st == StatusValid {
		listed := false
		for i, days := range ReportWindows {
			if rec.NotAfter.After(r.At.Add(time.Duration(days) * 24 * time.Hour)) {
				continue
			}
			r.Expiring[i]++
			if rec.RenewedBy == "" {
				r.NotRenewed[i]++
			}
			if !listed {
				b.soonest.add(entry())
				listed = true
			}
		}
	}
	since := r.At.Add(-ReportRecent)
	if rec.RenewalOf != "" && rec.Issued() && !rec.IssuedAt.Before(since) && !rec.IssuedAt.After(r.At) {
		r.RenewalCount++
		b.renewals.add(entry())
	}
	if st == StatusRevoked && !rec.RevokedAt.Before(since) && !rec.RevokedAt.After(r.At) {
		r.RevocationCount++
		b.revoks.add(entry())
	}
}

// Report returns the report of the records added so far.
func (b *ReportBuilder) Report() *Report {
	r := b.r
	r.Soonest, r.Renewals, r.Revocations = b.soonest.sorted(), b.renewals.sorted(), b.revoks.sorted()
	return &r
}

// Report reads every record once and summarizes them at Now (see Report),
// listing at most limit certificates per section. It needs no lock: a
// record changed meanwhile is counted in one of its states.
func (c *CA) Report(limit int) (*Report, error) {
	b := NewReportBuilder(c.Now().UTC(), limit)
	for rec, err := range c.Records() {
		if err != nil {
			return nil, err
		}
		b.Add(rec)
	}
	return b.Report(), nil
}

// topK keeps the limit entries that sort first by less, in memory bounded
// by twice limit: it sorts and cuts when it holds that many.
type topK struct {
	limit   int
	less    func(a, b ReportEntry) bool
	entries []ReportEntry
}

func (t *topK) add(e ReportEntry) {
	t.entries = append(t.entries, e)
	if len(t.entries) >= 2*t.limit {
		t.cut()
	}
}

func (t *topK) cut() {
	slices.SortStableFunc(t.entries, func(a, b ReportEntry) int {
		switch {
		case t.less(a, b):
			return -1
		case t.less(b, a):
			return 1
		}
		return 0
	})
	if len(t.entries) > t.limit {
		t.entries = t.entries[:t.limit]
	}
}

func (t *topK) sorted() []ReportEntry {
	t.cut()
	return slices.Clone(t.entries)
}

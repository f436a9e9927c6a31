package ca

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"minica/revoke"
)

func TestReport(t *testing.T) {
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	c, signer := newTestCA(t, InitOptions{Now: fixedClock(start)})
	at := func(d time.Duration) { c.Now = fixedClock(start.Add(d)) }
	day := 24 * time.Hour
	issue := func(name string, p Profile, validity time.Duration) *Record {
		t.Helper()
		req := Request{Name: name, Profile: p, Validity: validity, Force: true}
		if p == Server {
			req.DNSNames = []string{name + ".example.com"}
		}
		is, err := c.Issue(signer, req)
		if err != nil {
			t.Fatal(err)
		}
		return is.Record
	}
	at(time.Hour)
	issue("week", Client, 100*day)    // expires at +100d: within 7d of +95d
	issue("month", Server, 120*day)   // within 30d
	issue("quarter", Client, 170*day) // within 90d
	issue("far", Client, 400*day)
	issue("gone", Client, 10*day) // expired by then
	oldRevoked := issue("oldrev", Client, 400*day)
	if _, err := c.RevokeRecord(oldRevoked, revoke.KeyCompromise); err != nil { // at +1h: not recent
		t.Fatal(err)
	}
	at(80 * day)
	renewMe := issue("renewed", Client, 20*day) // expires +100d, renewed
	at(85 * day)
	rn, err := c.Renew(signer, renewMe, RenewOptions{Validity: 400 * day})
	if err != nil {
		t.Fatal(err)
	}
	recent := issue("recentrev", Server, 400*day)
	if _, err := c.RevokeRecord(recent, revoke.Superseded); err != nil {
		t.Fatal(err)
	}
	at(95 * day)
	rep, err := c.Report(0)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Records != 9 {
		t.Errorf("Records = %d; want 9", rep.Records)
	}
	wantStatus := map[Status]int{StatusValid: 6, StatusExpired: 1, StatusRevoked: 2}
	if fmt.Sprint(rep.Status) != fmt.Sprint(wantStatus) {
		t.Errorf("Status = %v; want %v", rep.Status, wantStatus)
	}
	if got := rep.Profiles[Server]; got[StatusValid] != 1 || got[StatusRevoked] != 1 {
		t.Errorf("Profiles[server] = %v; want 1 valid, 1 revoked", got)
	}
	// week (+100d) and renewed (+100d) within 7d; month (+120d) within 30d;
	// quarter (+170d) within 90d.
	if want := []int{2, 3, 4}; !slices.Equal(rep.Expiring, want) {
		t.Errorf("Expiring = %v; want %v", rep.Expiring, want)
	}
	if want := []int{1, 2, 3}; !slices.Equal(rep.NotRenewed, want) {
		t.Errorf("NotRenewed = %v; want %v", rep.NotRenewed, want)
	}
	var names []string
	for _, e := range rep.Soonest {
		names = append(names, e.Name)
	}
	if len(names) != 4 || names[2] != "month" || names[3] != "quarter" {
		t.Errorf("Soonest = %v; want week and renewed, then month, quarter", names)
	}
	if rep.RenewalCount != 1 || rep.Renewals[0].Serial != rn.Record.Serial || rep.Renewals[0].RenewalOf != renewMe.Serial {
		t.Errorf("Renewals = %d %+v; want the one successor", rep.RenewalCount, rep.Renewals)
	}
	if rep.RevocationCount != 1 || rep.Revocations[0].Name != "recentrev" || rep.Revocations[0].Reason != "superseded" {
		t.Errorf("Revocations = %d %+v; want recentrev only", rep.RevocationCount, rep.Revocations)
	}
}

func TestReportLimit(t *testing.T) {
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	b := NewReportBuilder(at, 3)
	for i := range 100 {
		// Expiring in 100-i hours: the last added expire first.
		b.Add(&Record{Serial: fmt.Sprintf("%032x", i+1), Name: fmt.Sprintf("n%d", i), Profile: Client, Status: StatusValid,
			NotAfter: at.Add(time.Duration(100-i) * time.Hour), IssuedAt: at.Add(-time.Hour)})
	}
	rep := b.Report()
	if rep.Expiring[0] != 100 || len(rep.Soonest) != 3 || rep.Soonest[0].Name != "n99" || rep.Soonest[2].Name != "n97" {
		t.Errorf("Expiring = %v, Soonest = %+v; want 100 counted, n99 n98 n97 listed", rep.Expiring, rep.Soonest)
	}
}

// TestReportMemoryBounded feeds a ReportBuilder many records and checks
// that its heap does not grow with their number.
func TestReportMemoryBounded(t *testing.T) {
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	b := NewReportBuilder(at, DefaultReportLimit)
	rec := &Record{Name: "n", Profile: Client, IssuedAt: at.Add(-time.Hour), RenewalOf: "x"}
	add := func(i int) {
		rec.Serial = fmt.Sprintf("%032x", i+1)
		// Every record is in every list: expiring, a recent renewal, and
		// every third revoked recently.
		rec.Status, rec.RevokedAt, rec.NotAfter = StatusValid, time.Time{}, at.Add(time.Duration(i%1000)*time.Minute)
		if i%3 == 0 {
			rec.Status, rec.RevokedAt, rec.Reason = StatusRevoked, at.Add(-time.Duration(i%1000)*time.Second), "superseded"
		}
		b.Add(rec)
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	n := 200_000
	for i := range 10_000 {
		add(i)
	}
	small := heap()
	for i := 10_000; i < n; i++ {
		add(i)
	}
	large := heap()
	if large > small+1<<20 {
		t.Errorf("heap grew from %d to %d bytes between 10^4 and %d records", small, large, n)
	}
	if rep := b.Report(); rep.Records != n || len(rep.Soonest) != DefaultReportLimit || rep.RenewalCount != n || rep.RevocationCount != (n+2)/3 {
		t.Errorf("report of %d records: %d records, %d listed, %d renewals, %d revocations", n, rep.Records, len(rep.Soonest), rep.RenewalCount, rep.RevocationCount)
	}
}

package ca

import (
	"bytes"
	"minica/ca/store/recordjson"
	"os"
	"strings"
	"testing"
)

// Issuance appends the completed record to the pending one; a completion
// cut short by a crash leaves the record pending, and Check completes it.
func TestIssueAppendsCompletedRecord(t *testing.T) {
	c, _, is := caWithClient(t, "simon")
	file := c.Path(recordPath(is.Record.Serial))
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines) != 3 || len(lines[2]) != 0 {
		t.Fatalf("record file holds %q; want two lines", data)
	}
	for i, want := range []Status{StatusPending, StatusValid} {
		r, err := recordjson.Decode(lines[i])
		if err != nil || r.Status != want {
			t.Fatalf("line %d of the record = %v, %v; want status %s", i+1, r, err, want)
		}
	}

	if err := os.Truncate(file, int64(len(lines[0])+len(lines[1])/2)); err != nil {
		t.Fatal(err)
	}
	if r, err := c.Record(is.Cert.SerialNumber); err != nil || r.Status != StatusPending {
		t.Fatalf("record after a cut-short completion = %v, %v; want pending", r, err)
	}
	rep, err := c.Check()
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 0 || len(rep.Repaired) != 1 || !strings.Contains(rep.Repaired[0], "completed the interrupted issuance") {
		t.Fatalf("Check() repaired %q, problems %q; want the issuance completed", rep.Repaired, rep.Problems)
	}
	r, err := c.Record(is.Cert.SerialNumber)
	if err != nil || r.Status != StatusValid || r.Fingerprint != is.Record.Fingerprint {
		t.Fatalf("record after Check = %+v, %v; want the valid record", r, err)
	}
}

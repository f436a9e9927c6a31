package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"minica/ca/batchfile"
)

// The problems past the bound are counted on a line of their own.
func TestBatchFileErrorPrint(t *testing.T) {
	ps := &batchfile.Problems{}
	for i := range 2 * batchfile.MaxProblems {
		ps.Add(batchfile.Problem{Line: i + 2, Col: 2, Field: "email", Err: errors.New("bad")})
	}
	fe := &batchFileError{file: "a.csv", problems: ps}
	if got, want := fe.Error(), fmt.Sprintf("a.csv: %d problems in %d rows, nothing was issued", 2*batchfile.MaxProblems, 2*batchfile.MaxProblems); got != want {
		t.Errorf("Error() = %q; want %q", got, want)
	}
	var out strings.Builder
	fe.print(&out)
	if !strings.HasPrefix(out.String(), "minica: a.csv:2:2: email: bad\n") {
		t.Errorf("output starts %q", out.String()[:min(80, out.Len())])
	}
	if !strings.HasSuffix(out.String(), fmt.Sprintf("minica: ... and %d more problems\n", batchfile.MaxProblems)) {
		t.Errorf("output ends %q", out.String()[max(0, out.Len()-80):])
	}
}

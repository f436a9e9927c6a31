package main

import (
	"fmt"
	"io"

	"minica/ca/batchfile"
)

// batchFileError reports every problem of a --from file: nothing was issued.
type batchFileError struct {
	file     string
	problems *batchfile.Problems
}

func (e *batchFileError) Error() string {
	n, rows := e.problems.Total(), e.problems.Rows()
	return fmt.Sprintf("%s: %d %s in %d %s, nothing was issued", e.file, n, plural(n, "problem", "problems"), rows, plural(rows, "row", "rows"))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// print lists the problems, one a line, in the file:line:column form that
// editors jump to.
func (e *batchFileError) print(w io.Writer) {
	listed := e.problems.Listed()
	for _, p := range listed {
		fmt.Fprintf(w, "minica: %s\n", p.String(e.file))
	}
	if more := e.problems.Total() - len(listed); more > 0 {
		fmt.Fprintf(w, "minica: ... and %d more %s\n", more, plural(more, "problem", "problems"))
	}
}

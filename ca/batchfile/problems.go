package batchfile

import (
	"fmt"
	"slices"
)

// MaxProblems bounds how many problems of a file Problems lists; the rest
// are counted.
const MaxProblems = 50

// Problem is what is wrong at one place of a batch file.
type Problem struct {
	// Line is the file's line, from 1; Col the cell's column (a CSV
	// field's position, a JSON Lines key's byte column), 0 for the whole
	// line.
	Line, Col int
	// Field is the column the problem is about, "" when none.
	Field string
	Err   error
}

// String is the problem in the file:line:column form that editors jump
// to, file being the name to show.
func (p Problem) String(file string) string {
	switch {
	case p.Col > 0 && p.Field != "":
		return fmt.Sprintf("%s:%d:%d: %s: %v", file, p.Line, p.Col, p.Field, p.Err)
	case p.Col > 0:
		return fmt.Sprintf("%s:%d:%d: %v", file, p.Line, p.Col, p.Err)
	}
	return fmt.Sprintf("%s:%d: %v", file, p.Line, p.Err)
}

// Problems collects the problems of a file, keeping the first MaxProblems.
// The zero value is empty and ready to use.
type Problems struct {
	list  []Problem
	total int
	rows  map[int]bool // lines with a problem
}

// Add records p.
func (ps *Problems) Add(p Problem) {
	if ps.rows == nil {
		ps.rows = make(map[int]bool)
	}
	ps.total++
	ps.rows[p.Line] = true
	if len(ps.list) < MaxProblems {
		ps.list = append(ps.list, p)
	}
}

// Total counts every problem added, listed or not.
func (ps *Problems) Total() int { return ps.total }

// Rows counts the lines that have a problem.
func (ps *Problems) Rows() int { return len(ps.rows) }

// Listed returns the problems kept, at most MaxProblems, in the order of
// their line and column.
func (ps *Problems) Listed() []Problem {
	list := slices.Clone(ps.list)
	slices.SortStableFunc(list, func(a, b Problem) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Col - b.Col
	})
	return list
}

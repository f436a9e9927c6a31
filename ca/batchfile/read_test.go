package batchfile_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"minica/ca"
	"minica/ca/batchfile"
)

func TestRead(t *testing.T) {
	d := batchfile.Defaults{Profile: ca.Client, EmailInSubject: true}
	tests := []struct {
		name, file, text string
		wantNames        []string
		wantEmails       [][]string
		wantProblems     []string
	}{
		{name: "csv", file: "a.csv", text: "name,email\nalice,alice@example.com\nbob,\n",
			wantNames: []string{"alice", "bob"}, wantEmails: [][]string{{"alice@example.com"}, nil}},
		{name: "bom and crlf", file: "a.csv", text: "\ufeffName , Email\r\nalice,a@example.com; b@example.com\r\n\r\nbob,bob@example.com\r\n",
			wantNames: []string{"alice", "bob"}, wantEmails: [][]string{{"a@example.com", "b@example.com"}, {"bob@example.com"}}},
		{name: "csv detected by content", file: "", text: "name\nalice\n", wantNames: []string{"alice"}, wantEmails: [][]string{nil}},
		{name: "quoted cell", file: "a.csv", text: "name,o\nalice,\"Example, Inc.\"\n", wantNames: []string{"alice"}, wantEmails: [][]string{nil}},
		{name: "jsonl detected by content", file: "", text: "\ufeff{\"name\":\"alice\",\"email\":[\"a@example.com\"]}\r\n\n{\"name\":\"bob\",\"email\":\"b@example.com;c@example.com\",\"cn\":null}\n",
			wantNames: []string{"alice", "bob"}, wantEmails: [][]string{{"a@example.com"}, {"b@example.com", "c@example.com"}}},
		{name: "unknown column", file: "a.csv", text: "name,mail\nalice,a@example.com\n",
			wantProblems: []string{`a.csv:1:2: unknown column "mail": want name, email, cn, ou, o, dns, ip, uri, validity`}},
		{name: "no name column", file: "a.csv", text: "email\na@example.com\n",
			wantProblems: []string{"a.csv:1: no name column: the header must name one"}},
		{name: "wrong column count", file: "a.csv", text: "name,email\nalice\nbob,b@example.com,x\n",
			wantProblems: []string{"a.csv:2:2: 1 column, the header has 2", "a.csv:3:3: 3 columns, the header has 2"}},
		{name: "bad cells", file: "a.csv", text: "name,email,dns,ip,uri,validity,cn\nalice,a@,x_y,1.2.3,nope,0d,\u202ealice\n",
			wantProblems: []string{
				`a.csv:2:2: email: invalid email "a@": want a plain address such as user@example.com`,
				`a.csv:2:3: dns: invalid DNS name "x_y": label "x_y" is not 1 to 63 letters, digits or hyphens`,
				`a.csv:2:4: ip: invalid IP address "1.2.3": not an IP address`,
				`a.csv:2:5: uri: invalid URI "nope": want an absolute URI such as spiffe://example.org/svc`,
				`a.csv:2:6: validity: invalid duration "0d": want a positive number with a unit, such as 90d, 10y, 36h or 30m`,
				`a.csv:2:7: cn: invalid common name "\u202ealice": control, bidi or other invisible characters are not allowed`,
			}},
		{name: "empty and duplicate names", file: "a.csv", text: "name\n\"\"\nalice\nalice\n",
			wantProblems: []string{"a.csv:2:1: name: empty: every row needs a name", `a.csv:4:1: name: "alice" is on line 3 already`}},
		{name: "email as name", file: "a.csv", text: "name\nalice@example.com\n",
			wantProblems: []string{`a.csv:2:1: name: invalid name "alice@example.com": a name cannot hold "@"`}},
		{name: "json problems", file: "a.jsonl", text: "{\"name\":\"a\",\"name\":\"b\"}\n{\"name\":1}\n{\"name\":\"c\"} x\n{\"name\":\"d\",\n",
			wantProblems: []string{`a.jsonl:1:13: name: given twice`, `a.jsonl:2:2: name: want a string`,
				`a.jsonl:3:14: unexpected text after the object: one object per line`,
				`a.jsonl:4:13: invalid JSON: the line ends before the object does: one whole object per line`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, ps := batchfile.Read(strings.NewReader(tt.text), tt.file, d)
			var got []string
			for _, p := range ps.Listed() {
				got = append(got, p.String(tt.file))
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tt.wantProblems))
			if !slices.Equal(got, want) {
				t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if len(tt.wantProblems) > 0 {
				return
			}
			var names []string
			for i, r := range rows {
				names = append(names, r.Request.Name)
				if !slices.Equal(r.Request.Emails, tt.wantEmails[i]) {
					t.Errorf("row %d emails %q; want %q", i, r.Request.Emails, tt.wantEmails[i])
				}
			}
			if !slices.Equal(names, tt.wantNames) {
				t.Errorf("names %q; want %q", names, tt.wantNames)
			}
		})
	}
}

// Problems are counted past the bound, listed up to it, in the order of
// their lines.
func TestReadBound(t *testing.T) {
	var b strings.Builder
	b.WriteString("name,email\n")
	for i := range 2 * batchfile.MaxProblems {
		fmt.Fprintf(&b, "u%d,bad%d\n", i, i)
	}
	_, ps := batchfile.Read(strings.NewReader(b.String()), "a.csv", batchfile.Defaults{Profile: ca.Client})
	listed := ps.Listed()
	if ps.Total() != 2*batchfile.MaxProblems || len(listed) != batchfile.MaxProblems || ps.Rows() != 2*batchfile.MaxProblems {
		t.Fatalf("total %d, listed %d, rows %d; want %d, %d, %d", ps.Total(), len(listed), ps.Rows(), 2*batchfile.MaxProblems, batchfile.MaxProblems, 2*batchfile.MaxProblems)
	}
	if !slices.IsSortedFunc(listed, func(a, b batchfile.Problem) int { return a.Line - b.Line }) {
		t.Error("Listed() is not in the order of the lines")
	}
}

package main

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"minica/ca"
)

// The columns of a --from file, in the order help texts list them. Every
// column but name, cn and validity holds a list, items separated by ";".
var batchColumns = []string{"name", "email", "cn", "ou", "o", "dns", "ip", "uri", "validity"}

// maxBatchProblems bounds how many problems of a --from file are listed;
// the rest are counted.
const maxBatchProblems = 50

// maxBatchLine bounds a line of a JSON Lines file.
const maxBatchLine = 1 << 20

// batchRow is one row of a --from file, turned into a request.
type batchRow struct {
	line int
	req  ca.Request
	// col gives the column of each field the row set, for messages: the
	// field's position for CSV, its byte column for JSON Lines.
	col map[string]int
}

// batchProblem is what is wrong at one place of a --from file.
type batchProblem struct {
	line, col int // col 0: the whole line
	field     string
	err       error
}

func (p batchProblem) String(file string) string {
	switch {
	case p.col > 0 && p.field != "":
		return fmt.Sprintf("%s:%d:%d: %s: %v", file, p.line, p.col, p.field, p.err)
	case p.col > 0:
		return fmt.Sprintf("%s:%d:%d: %v", file, p.line, p.col, p.err)
	}
	return fmt.Sprintf("%s:%d: %v", file, p.line, p.err)
}

// batchProblems collects the problems of a file, keeping the first
// maxBatchProblems.
type batchProblems struct {
	list  []batchProblem
	total int
	rows  map[int]bool // lines with a problem
}

func (ps *batchProblems) add(p batchProblem) {
	if ps.rows == nil {
		ps.rows = make(map[int]bool)
	}
	ps.total++
	ps.rows[p.line] = true
	if len(ps.list) < maxBatchProblems {
		ps.list = append(ps.list, p)
	}
}

// batchFileError reports every problem of a --from file: nothing was issued.
type batchFileError struct {
	file     string
	problems *batchProblems
}

func (e *batchFileError) Error() string {
	n := e.problems.total
	s := "s"
	if n == 1 {
		s = ""
	}
	rows := len(e.problems.rows)
	return fmt.Sprintf("%s: %d problem%s in %d %s, nothing was issued", e.file, n, s, rows, plural(rows, "row", "rows"))
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
	slices.SortStableFunc(e.problems.list, func(a, b batchProblem) int {
		if a.line != b.line {
			return a.line - b.line
		}
		return a.col - b.col
	})
	for _, p := range e.problems.list {
		fmt.Fprintf(w, "minica: %s\n", p.String(e.file))
	}
	if more := e.problems.total - len(e.problems.list); more > 0 {
		fmt.Fprintf(w, "minica: ... and %d more %s\n", more, plural(more, "problem", "problems"))
	}
}

// batchDefaults are what the command line sets for every row.
type batchDefaults struct {
	profile        ca.Profile
	keyType        ca.KeyType
	validity       time.Duration
	emailInSubject bool
}

// readBatchFile reads a CSV or JSON Lines file of requests (see
// batchColumns). It returns every row it could read and the problems of
// the others; a problem of the file's syntax ends the reading there.
func readBatchFile(r io.Reader, name string, d batchDefaults) ([]*batchRow, *batchProblems) {
	br := bufio.NewReaderSize(r, 64<<10)
	skipBOM(br)
	jsonl := false
	switch strings.ToLower(filepath.Ext(name)) {
	case ".jsonl", ".ndjson", ".json":
		jsonl = true
	case ".csv":
	default:
		jsonl = firstByte(br) == '{'
	}
	ps := &batchProblems{}
	var rows []*batchRow
	if jsonl {
		rows = readJSONLines(br, d, ps)
	} else {
		rows = readCSV(br, d, ps)
	}
	checkDuplicates(rows, ps)
	return rows, ps
}

// skipBOM drops a UTF-8 byte order mark, which spreadsheets put first.
func skipBOM(br *bufio.Reader) {
	if b, err := br.Peek(3); err == nil && bytes.Equal(b, []byte{0xEF, 0xBB, 0xBF}) {
		br.Discard(3)
	}
}

// firstByte peeks at the first byte that is not white space.
func firstByte(br *bufio.Reader) byte {
	b, _ := br.Peek(br.Size())
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

func readCSV(br io.Reader, d batchDefaults, ps *batchProblems) []*batchRow {
	cr := csv.NewReader(br)
	cr.TrimLeadingSpace = true
	header, err := cr.Read()
	if err == io.EOF {
		ps.add(batchProblem{line: 1, err: errors.New("empty file: want a header row naming the columns, such as name,email")})
		return nil
	}
	if err != nil {
		ps.add(csvProblem(err))
		return nil
	}
	fields := make([]string, len(header))
	seen := make(map[string]int)
	for i, h := range header {
		f := strings.ToLower(strings.TrimSpace(h))
		fields[i] = f
		switch {
		case !slices.Contains(batchColumns, f):
			ps.add(batchProblem{line: 1, col: i + 1, err: fmt.Errorf("unknown column %s: want %s", quoteCell(h), strings.Join(batchColumns, ", "))})
		case seen[f] > 0:
			ps.add(batchProblem{line: 1, col: i + 1, err: fmt.Errorf("column %q given twice (also column %d)", f, seen[f])})
		default:
			seen[f] = i + 1
		}
	}
	if seen["name"] == 0 {
		ps.add(batchProblem{line: 1, err: errors.New("no name column: the header must name one")})
	}
	if ps.total > 0 {
		return nil
	}
	var rows []*batchRow
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return rows
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) && errors.Is(pe.Err, csv.ErrFieldCount) {
			ps.add(batchProblem{line: pe.StartLine, col: min(len(rec), len(fields)) + 1,
				err: fmt.Errorf("%d %s, the header has %d", len(rec), plural(len(rec), "column", "columns"), len(fields))})
			continue
		}
		if err != nil {
			ps.add(csvProblem(err))
			return rows
		}
		line, _ := cr.FieldPos(0)
		cells := make(map[string]string, len(rec))
		row := &batchRow{line: line, col: make(map[string]int, len(rec))}
		for i, v := range rec {
			cells[fields[i]] = v
			row.col[fields[i]] = i + 1
		}
		if row.fill(cells, nil, d, ps) {
			rows = append(rows, row)
		}
	}
}

func csvProblem(err error) batchProblem {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return batchProblem{line: pe.Line, col: pe.Column, err: fmt.Errorf("%v (quote a cell holding a comma or a quote, and double the quotes inside it)", pe.Err)}
	}
	return batchProblem{line: 1, err: fmt.Errorf("reading: %w", err)}
}

func quoteCell(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func readJSONLines(br *bufio.Reader, d batchDefaults, ps *batchProblems) []*batchRow {
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 0, 64<<10), maxBatchLine)
	var rows []*batchRow
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimRight(sc.Bytes(), "\r")
		if len(bytes.TrimSpace(text)) == 0 {
			continue
		}
		cells, lists, col, p := parseJSONLine(text)
		if p != nil {
			p.line = line
			ps.add(*p)
			continue
		}
		row := &batchRow{line: line, col: col}
		if row.fill(cells, lists, d, ps) {
			rows = append(rows, row)
		}
	}
	if err := sc.Err(); err != nil {
		msg := fmt.Errorf("reading: %w", err)
		if errors.Is(err, bufio.ErrTooLong) {
			msg = fmt.Errorf("line longer than %d bytes", maxBatchLine)
		}
		ps.add(batchProblem{line: line + 1, err: msg})
	}
	return rows
}

// parseJSONLine reads one JSON object of strings (a list field may also be
// an array of strings), with the byte column of each key.
func parseJSONLine(text []byte) (cells map[string]string, lists map[string][]string, col map[string]int, p *batchProblem) {
	dec := json.NewDecoder(bytes.NewReader(text))
	bad := func(at int64, field string, format string, args ...any) *batchProblem {
		return &batchProblem{col: int(at) + 1, field: field, err: fmt.Errorf(format, args...)}
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, nil, bad(0, "", "want a JSON object such as {\"name\": \"simon\", \"email\": \"simon@example.com\"}")
	}
	cells, lists, col = map[string]string{}, map[string][]string{}, map[string]int{}
	for dec.More() {
		at := dec.InputOffset()
		for at < int64(len(text)) && strings.IndexByte(" \t,", text[at]) >= 0 {
			at++
		}
		t, err := dec.Token()
		if err != nil {
			return nil, nil, nil, bad(at, "", "invalid JSON: %v", jsonErr(err))
		}
		key := t.(string)
		if !slices.Contains(batchColumns, key) {
			return nil, nil, nil, bad(at, "", "unknown field %s: want %s", quoteCell(key), strings.Join(batchColumns, ", "))
		}
		if _, dup := col[key]; dup {
			return nil, nil, nil, bad(at, key, "given twice")
		}
		col[key] = int(at) + 1
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, nil, nil, bad(at, key, "invalid JSON: %v", jsonErr(err))
		}
		var s string
		var list []string
		switch {
		case string(raw) == "null":
		case json.Unmarshal(raw, &s) == nil:
			cells[key] = s
		case isListColumn(key) && json.Unmarshal(raw, &list) == nil:
			lists[key] = list
		case isListColumn(key):
			return nil, nil, nil, bad(at, key, "want a string or an array of strings")
		default:
			return nil, nil, nil, bad(at, key, "want a string")
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, nil, bad(dec.InputOffset(), "", "invalid JSON: %v", jsonErr(err))
	}
	end := dec.InputOffset()
	if rest := bytes.TrimLeft(text[end:], " \t"); len(rest) > 0 {
		return nil, nil, nil, bad(end+int64(len(text[end:])-len(rest)), "", "unexpected text after the object: one object per line")
	}
	return cells, lists, col, nil
}

// jsonErr says that a line ended inside its object, which the decoder
// calls EOF.
func jsonErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("the line ends before the object does: one whole object per line")
	}
	return err
}

func isListColumn(f string) bool { return f != "name" && f != "cn" && f != "validity" }

// splitList splits a cell of a list column at ";", dropping empty items.
func splitList(s string) []string {
	var out []string
	for item := range strings.SplitSeq(s, ";") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// fill builds the row's request from its cells (lists from JSON arrays
// win over cells), validating each field; it reports false when a field
// is bad, after adding its problems.
func (row *batchRow) fill(cells map[string]string, lists map[string][]string, d batchDefaults, ps *batchProblems) bool {
	before := ps.total
	bad := func(field string, err error) {
		ps.add(batchProblem{line: row.line, col: row.col[field], field: field, err: err})
	}
	list := func(field string) []string {
		if l, ok := lists[field]; ok {
			var out []string
			for _, v := range l {
				if v = strings.TrimSpace(v); v != "" {
					out = append(out, v)
				}
			}
			return out
		}
		return splitList(cells[field])
	}
	req := ca.Request{
		Name: strings.TrimSpace(cells["name"]), Profile: d.profile, KeyType: d.keyType, Validity: d.validity,
		CommonName: strings.TrimSpace(cells["cn"]), EmailInSubject: d.profile == ca.Client && d.emailInSubject,
	}
	if req.Name == "" {
		bad("name", errors.New("empty: every row needs a name"))
	} else if err := ca.ValidateName(req.Name); err != nil {
		bad("name", err)
	}
	if req.CommonName != "" {
		if err := ca.ValidateText("common name", req.CommonName); err != nil {
			bad("cn", err)
		} else if d.profile == ca.Server && req.CommonName != req.Name {
			bad("cn", fmt.Errorf("a server certificate's CN is its name (%q)", req.Name))
		}
	}
	for _, f := range []struct {
		field, what string
		dst         *[]string
	}{{"o", "organization", &req.Organization}, {"ou", "organizational unit", &req.OrganizationalUnit}} {
		for _, v := range list(f.field) {
			if err := ca.ValidateText(f.what, v); err != nil {
				bad(f.field, err)
			}
			*f.dst = append(*f.dst, v)
		}
	}
	for _, v := range list("email") {
		if err := ca.ValidateEmail(v); err != nil {
			bad("email", err)
		}
		req.Emails = append(req.Emails, v)
	}
	for _, v := range list("dns") {
		if err := ca.ValidateDNSName(v); err != nil {
			bad("dns", err)
		}
		req.DNSNames = append(req.DNSNames, v)
	}
	for _, v := range list("ip") {
		ip, err := ca.ParseIP(v)
		if err != nil {
			bad("ip", fmt.Errorf("invalid IP address %v", err))
		}
		req.IPs = append(req.IPs, ip)
	}
	for _, v := range list("uri") {
		if _, err := ca.ValidateURI(v); err != nil {
			bad("uri", err)
		}
		req.URIs = append(req.URIs, v)
	}
	if v := strings.TrimSpace(cells["validity"]); v != "" {
		dur, err := ca.ParseDuration(v)
		if err != nil {
			bad("validity", err)
		}
		req.Validity = dur
	}
	row.req = req
	return ps.total == before
}

// checkDuplicates reports every name given on more than one row.
func checkDuplicates(rows []*batchRow, ps *batchProblems) {
	first := make(map[string]int, len(rows))
	for _, r := range rows {
		key := r.req.Name
		if line, dup := first[key]; dup {
			ps.add(batchProblem{line: r.line, col: r.col["name"], field: "name", err: fmt.Errorf("%q is on line %d already", r.req.Name, line)})
			continue
		}
		first[key] = r.line
	}
}

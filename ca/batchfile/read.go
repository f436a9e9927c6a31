package batchfile

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

// Columns are the columns of a batch file, in the order help texts list
// them. Every column but name, cn and validity holds a list.
var Columns = []string{"name", "email", "cn", "ou", "o", "dns", "ip", "uri", "validity"}

// MaxLine bounds a line of a JSON Lines file, in bytes.
const MaxLine = 1 << 20

// Defaults are what the command line sets for every row.
type Defaults struct {
	Profile  ca.Profile
	KeyType  ca.KeyType
	Validity time.Duration
	// EmailInSubject puts a client's email in its subject too.
	EmailInSubject bool
}

// Row is one row of a batch file, turned into a request.
type Row struct {
	// Line is the row's line in the file, from 1.
	Line    int
	Request ca.Request
	// col gives the column of each field the row set.
	col map[string]int
}

// Column is the column of field in the row (as Problem.Col), 0 when the
// row does not set it.
func (r *Row) Column(field string) int { return r.col[field] }

// Read reads a CSV or JSON Lines batch file from r; name is the file's
// name, whose extension tells the format ("" to tell it by the content).
// It returns every row it could read and the problems of the others.
func Read(r io.Reader, name string, d Defaults) ([]*Row, *Problems) {
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
	ps := &Problems{}
	var rows []*Row
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

func readCSV(br io.Reader, d Defaults, ps *Problems) []*Row {
	cr := csv.NewReader(br)
	cr.TrimLeadingSpace = true
	fields, ok := readHeader(cr, ps)
	if !ok {
		return nil
	}
	var rows []*Row
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return rows
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) && errors.Is(pe.Err, csv.ErrFieldCount) {
			ps.Add(Problem{Line: pe.StartLine, Col: min(len(rec), len(fields)) + 1,
				Err: fmt.Errorf("%d %s, the header has %d", len(rec), plural(len(rec), "column", "columns"), len(fields))})
			continue
		}
		if err != nil {
			ps.Add(csvProblem(err))
			return rows
		}
		line, _ := cr.FieldPos(0)
		cells := make(map[string]string, len(rec))
		row := &Row{Line: line, col: make(map[string]int, len(rec))}
		for i, v := range rec {
			cells[fields[i]] = v
			row.col[fields[i]] = i + 1
		}
		if row.fill(cells, nil, d, ps) {
			rows = append(rows, row)
		}
	}
}

// readHeader reads the CSV header: the column of each position, lower
// case. It reports false, after adding the problems, for a header that
// names an unknown column, one twice, or no name column.
func readHeader(cr *csv.Reader, ps *Problems) ([]string, bool) {
	header, err := cr.Read()
	if err == io.EOF {
		ps.Add(Problem{Line: 1, Err: errors.New("empty file: want a header row naming the columns, such as name,email")})
		return nil, false
	}
	if err != nil {
		ps.Add(csvProblem(err))
		return nil, false
	}
	fields := make([]string, len(header))
	seen := make(map[string]int)
	for i, h := range header {
		f := strings.ToLower(strings.TrimSpace(h))
		fields[i] = f
		switch {
		case !slices.Contains(Columns, f):
			ps.Add(Problem{Line: 1, Col: i + 1, Err: fmt.Errorf("unknown column %s: want %s", quoteCell(h), strings.Join(Columns, ", "))})
		case seen[f] > 0:
			ps.Add(Problem{Line: 1, Col: i + 1, Err: fmt.Errorf("column %q given twice (also column %d)", f, seen[f])})
		default:
			seen[f] = i + 1
		}
	}
	if seen["name"] == 0 {
		ps.Add(Problem{Line: 1, Err: errors.New("no name column: the header must name one")})
	}
	return fields, ps.Total() == 0
}

func csvProblem(err error) Problem {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return Problem{Line: pe.Line, Col: pe.Column, Err: fmt.Errorf("%v (quote a cell holding a comma or a quote, and double the quotes inside it)", pe.Err)}
	}
	return Problem{Line: 1, Err: fmt.Errorf("reading: %w", err)}
}

func quoteCell(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func readJSONLines(br *bufio.Reader, d Defaults, ps *Problems) []*Row {
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLine)
	var rows []*Row
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimRight(sc.Bytes(), "\r")
		if len(bytes.TrimSpace(text)) == 0 {
			continue
		}
		cells, lists, col, p := parseJSONLine(text)
		if p != nil {
			p.Line = line
			ps.Add(*p)
			continue
		}
		row := &Row{Line: line, col: col}
		if row.fill(cells, lists, d, ps) {
			rows = append(rows, row)
		}
	}
	if err := sc.Err(); err != nil {
		msg := fmt.Errorf("reading: %w", err)
		if errors.Is(err, bufio.ErrTooLong) {
			msg = fmt.Errorf("line longer than %d bytes", MaxLine)
		}
		ps.Add(Problem{Line: line + 1, Err: msg})
	}
	return rows
}

// parseJSONLine reads one JSON object of strings (a list field may also be
// an array of strings), with the byte column of each key.
func parseJSONLine(text []byte) (cells map[string]string, lists map[string][]string, col map[string]int, p *Problem) {
	dec := json.NewDecoder(bytes.NewReader(text))
	bad := func(at int64, field string, format string, args ...any) *Problem {
		return &Problem{Col: int(at) + 1, Field: field, Err: fmt.Errorf(format, args...)}
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
		if !slices.Contains(Columns, key) {
			return nil, nil, nil, bad(at, "", "unknown field %s: want %s", quoteCell(key), strings.Join(Columns, ", "))
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

package batchfile

import (
	"errors"
	"fmt"
	"strings"

	"minica/ca"
)

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
func (row *Row) fill(cells map[string]string, lists map[string][]string, d Defaults, ps *Problems) bool {
	before := ps.Total()
	bad := func(field string, err error) {
		ps.Add(Problem{Line: row.Line, Col: row.col[field], Field: field, Err: err})
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
		Name: strings.TrimSpace(cells["name"]), Profile: d.Profile, KeyType: d.KeyType, Validity: d.Validity,
		CommonName: strings.TrimSpace(cells["cn"]), EmailInSubject: d.Profile == ca.Client && d.EmailInSubject,
	}
	if req.Name == "" {
		bad("name", errors.New("empty: every row needs a name"))
	} else if err := ca.ValidateName(req.Name); err != nil {
		bad("name", err)
	}
	if req.CommonName != "" {
		if err := ca.ValidateText("common name", req.CommonName); err != nil {
			bad("cn", err)
		} else if d.Profile == ca.Server && req.CommonName != req.Name {
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
	row.Request = req
	return ps.Total() == before
}

// checkDuplicates reports every name given on more than one row.
func checkDuplicates(rows []*Row, ps *Problems) {
	first := make(map[string]int, len(rows))
	for _, r := range rows {
		key := r.Request.Name
		if line, dup := first[key]; dup {
			ps.Add(Problem{Line: r.Line, Col: r.col["name"], Field: "name", Err: fmt.Errorf("%q is on line %d already", r.Request.Name, line)})
			continue
		}
		first[key] = r.Line
	}
}

package main

import (
	"encoding/csv"
	"os"

	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	scriptCommands["p12-password"] = cmdP12Password
}

// p12-password CSV NAME OUT: writes to OUT the password that the batch's
// password file CSV gives for NAME (its last row), checking the header.
func cmdP12Password(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: p12-password CSV NAME OUT")
	}
	f, err := os.Open(ts.MkAbs(args[0]))
	ts.Check(err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	ts.Check(err)
	if len(rows) == 0 || len(rows[0]) != 3 || rows[0][0] != "name" || rows[0][1] != "file" || rows[0][2] != "password" {
		ts.Fatalf("%s: header %q; want name,file,password", args[0], rows)
	}
	pw := ""
	for _, r := range rows[1:] {
		if r[0] == args[1] {
			pw = r[2]
		}
	}
	if pw == "" {
		ts.Fatalf("%s: no row for %s", args[0], args[1])
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[2]), []byte(pw), 0o600))
}

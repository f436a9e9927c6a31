package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// enrollToken finds the secret of an enrollment as a command prints it:
// in a link, in --json's "token", or on the token line of minica token.
var enrollToken = regexp.MustCompile(`(?m)(?:/enroll/|"token":"|^  token +)([A-Za-z0-9_-]{43})\b`)

// token-hidden DIR: the enrollment token (a link's or a bootstrap token)
// in the last command's stdout appears in no file under DIR, nor in its
// stderr.
func cmdTokenHidden(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 || neg {
		ts.Fatalf("usage: token-hidden DIR")
	}
	m := enrollToken.FindStringSubmatch(ts.ReadFile("stdout"))
	if m == nil {
		ts.Fatalf("no enrollment token in stdout")
	}
	token := m[1]
	if strings.Contains(ts.ReadFile("stderr"), token) {
		ts.Fatalf("stderr holds the token")
	}
	err := filepath.WalkDir(ts.MkAbs(args[0]), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(data), token) {
			ts.Fatalf("%s holds the token", path)
		}
		return nil
	})
	ts.Check(err)
}

// Registered here, beside its only user, to keep the shared table as it is.
func init() { scriptCommands["token-hidden"] = cmdTokenHidden }

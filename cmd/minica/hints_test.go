package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"minica/ca"
	"minica/ca/store/pg"
)

// The errors of ca and its storage engines state facts; the advice for each is
// chosen by errorHint, also through the wrapping a command adds.
func TestStoreHints(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{&pg.SchemaError{Store: "db", Found: 0}, "run 'minica store migrate'"},
		{&pg.SchemaError{Store: "db", Found: pg.SchemaVersion - 1}, "run 'minica store migrate'"},
		{&pg.SchemaError{Store: "db", Found: pg.SchemaVersion + 1}, "upgrade minica"},
		{fmt.Errorf("%w: %q is a standby server in recovery", pg.ErrReadOnlyStore, "db"), "point --store at the primary"},
		{fmt.Errorf("issuing: %w: its session ended", ca.ErrStoreLockLost), "run 'minica check'"},
		{fmt.Errorf("revoking: %w", ca.ErrCorruptRevocationLog), "run 'minica check'"},
		{fmt.Errorf("%w: serial 01 is signed, but completing its record failed: %w", ca.ErrIssuanceIncomplete, errors.New("disk full")), "run 'minica check': it completes"},
		{fmt.Errorf("%w: 2 certificates are signed, but completing their records failed: %w: its session ended", ca.ErrIssuanceIncomplete, ca.ErrStoreLockLost), "run 'minica check', which repairs what the command left, then run the command again"},
		{fmt.Errorf("%w: reading the records: %w", ca.ErrCopySourceUnreadable, &ca.CorruptRecordError{File: "db/01", Serial: "01", Err: errors.New("unexpected end of JSON input")}), "run 'minica check' first"},
	} {
		if got := errorHint(fmt.Errorf("command: %w", tt.err)); !strings.HasPrefix(got, tt.want) {
			t.Errorf("errorHint(%v) = %q; want it to begin %q", tt.err, got, tt.want)
		}
		if strings.Contains(tt.err.Error(), "run ") || strings.Contains(tt.err.Error(), "--") {
			t.Errorf("%q names a command or a flag; the hint should", tt.err)
		}
	}
}

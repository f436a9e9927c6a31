package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An offboarding that fails part-way names the certificates revoked
// before the failure, in text and in JSON, and publishes no CRL; check
// then settles the state, and running the command again revokes the rest
// and publishes one CRL for them all. The failure: a directory planted in
// the place of the second certificate's name index (docs/ca-directory.md),
// which revoke reads to find the certificate's line.
func TestRevokeEmailFailsPartWay(t *testing.T) {
	t.Parallel()
	for _, asJSON := range []bool{false, true} {
		dir := newCADir(t)
		for _, name := range []string{"simon-laptop", "simon-phone", "simon-tablet"} {
			mustMinica(t, dir, "issue", "client", name, "--email", "simon@example.com")
		}
		// Revoke takes them oldest first, as list --email orders them.
		var order []struct{ Name, Serial string }
		for line := range strings.Lines(mustMinica(t, dir, "list", "--email", "simon@example.com", "--json")) {
			order = append(order, struct{ Name, Serial string }{})
			if err := json.Unmarshal([]byte(line), &order[len(order)-1]); err != nil {
				t.Fatal(err)
			}
		}
		if len(order) != 3 {
			t.Fatalf("list --email found %d certificates; want 3", len(order))
		}
		first, second := order[0], order[1]
		index := filepath.Join(dir, "db", "names", second.Name)
		if err := os.Remove(index); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(index, "planted"), 0o700); err != nil {
			t.Fatal(err)
		}
		args := []string{"revoke", "--email", "simon@example.com", "--all", "--reason", "affiliationChanged"}
		if asJSON {
			args = append(args, "--json")
		}
		stdout, stderr, code := minica(t, dir, args...)
		if code != 1 {
			t.Fatalf("revoke with a broken name index: exit %d; want 1\n%s%s", code, stdout, stderr)
		}
		wantErr := "minica: error: reading name index " + `"` + index + `"`
		wantDone := "; before the failure, 1 certificate was revoked (not yet on the published CRL): " + first.Name + " (serial " + first.Serial + ")\n"
		if !strings.HasPrefix(stderr, wantErr) || !strings.Contains(stderr, wantDone) ||
			!strings.Contains(stderr, "minica: hint: run this command again: it skips what is done, revokes the rest and publishes the CRL") {
			t.Errorf("stderr (json %v):\n%s\nwant %q ... %q and the hint", asJSON, stderr, wantErr, wantDone)
		}
		if asJSON {
			var out struct {
				Certificates []revokedJSON `json:"certificates"`
				CRL          any           `json:"crl"`
			}
			if err := json.Unmarshal([]byte(stdout), &out); err != nil {
				t.Fatalf("stdout %q: %v", stdout, err)
			}
			if len(out.Certificates) != 1 || out.Certificates[0].Serial != first.Serial || out.Certificates[0].Already || out.CRL != nil {
				t.Errorf("JSON after the failure = %+v; want %s revoked and no CRL", out, first)
			}
		} else if want := "revoked " + first.Name + " (serial " + first.Serial + ") at "; !strings.HasPrefix(stdout, want) || strings.Count(stdout, "\n") != 1 {
			t.Errorf("stdout:\n%s\nwant one line starting %q", stdout, want)
		}
		for _, c := range order {
			if got, want := len(validSerials(t, dir, c.Name)), map[bool]int{true: 0, false: 1}[c == first]; got != want {
				t.Errorf("%s after the failure: %d valid certificates; want %d", c.Name, got, want)
			}
		}
		out := mustMinica(t, dir, "check")
		if !strings.Contains(out, "with the 1 revocation it lacked (serial "+first.Serial+")") {
			t.Errorf("check did not publish the revocation made before the failure:\n%s", out)
		}
		rerun := mustMinica(t, dir, args[:6]...)
		if strings.Count(rerun, "revoked simon-") != 2 || strings.Contains(rerun, first.Serial) || strings.Count(rerun, "published CRL") != 1 || !strings.Contains(rerun, "with 3 revoked") {
			t.Errorf("the rerun:\n%s\nwant the other two revoked, one CRL with 3", rerun)
		}
		checkNothingToRepair(t, dir)
	}
}

// An issuance of the person's that a kill interrupted holds no SANs yet:
// revoke --email settles it first, as check would, so that the
// certificate that reached the disk is revoked with the rest instead of
// being completed later, and the one that did not is voided.
func TestRevokeEmailSettlesInterrupted(t *testing.T) {
	t.Parallel()
	dir := newCADir(t)
	for _, name := range []string{"simon-laptop", "simon-phone", "simon-tablet"} {
		mustMinica(t, dir, "issue", "client", name, "--email", "simon@example.com")
	}
	phone := interruptIssue(t, dir, "simon-phone", false)
	tablet := interruptIssue(t, dir, "simon-tablet", true)
	out, errs, code := minica(t, dir, "revoke", "--email", "simon@example.com", "--all", "--reason", "affiliationChanged")
	if code != 0 {
		t.Fatalf("revoke: exit %d\n%s", code, errs)
	}
	for _, want := range []string{
		"minica: note: completed the interrupted issuance of simon-phone (serial " + phone + ")\n",
		"minica: note: voided serial " + tablet + " of simon-tablet: its issuance was interrupted before the certificate was written\n",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr:\n%s\nwant %q", errs, want)
		}
	}
	if !strings.Contains(out, "revoked simon-phone (serial "+phone+") at ") || strings.Count(out, "revoked simon-") != 2 || strings.Contains(out, tablet) {
		t.Errorf("stdout:\n%s\nwant simon-laptop and simon-phone revoked", out)
	}
	for _, name := range []string{"simon-laptop", "simon-phone", "simon-tablet"} {
		if got := validSerials(t, dir, name); len(got) != 0 {
			t.Errorf("%s still has valid certificates %v", name, got)
		}
	}
	checkNothingToRepair(t, dir)
}

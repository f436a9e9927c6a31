//go:build unix

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// renew --expiring killed with SIGKILL at a random point leaves a CA
// directory that check passes or repairs, with a record for every
// certificate file; a re-run (after check, or straight away) renews exactly
// the certificates that have no successor yet, so that in the end every
// one has exactly one, linked both ways.
func TestRenewExpiringKilled(t *testing.T) {
	t.Parallel()
	const trials, certs = 30, 8
	base := t.TempDir()
	var csv strings.Builder
	csv.WriteString("name,validity\n")
	for i := 1; i <= certs; i++ {
		fmt.Fprintf(&csv, "u%d,10d\n", i)
	}
	file := filepath.Join(base, "staff.csv")
	if err := os.WriteFile(file, []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	renew := []string{"renew", "--expiring", "30d", "--validity", "100d"}
	partial := 0
	for trial := range trials {
		dir := filepath.Join(base, fmt.Sprintf("ca%d", trial))
		mustMinica(t, dir, "init", "--cn", "Root", "--no-password")
		mustMinica(t, dir, "issue", "client", "--from", file)
		reported := killRenewal(t, dir, renew, trial)
		if len(reported) > 0 && len(reported) < certs {
			partial++
		}
		if trial%2 == 0 {
			if out, errs, code := minica(t, dir, "check"); code != 0 {
				t.Fatalf("trial %d: check after the kill: exit %d\n%s%s", trial, code, out, errs)
			}
		}
		checkEveryCertHasRecord(t, dir, trial)
		out, errs, code := minica(t, dir, renew...)
		if code != 0 {
			t.Fatalf("trial %d: re-run: exit %d\n%s", trial, code, errs)
		}
		for _, m := range regexp.MustCompile(`(?m)^renewed client "(u\d+)"`).FindAllStringSubmatch(out, -1) {
			if reported[m[1]] {
				t.Errorf("trial %d: the re-run renewed %s again, which was reported renewed before the kill", trial, m[1])
			}
		}
		out, errs, code = minica(t, dir, "check")
		leftover := regexp.MustCompile(`(?m)^repaired: voided serial [0-9a-f]{32} of u\d+: its issuance was interrupted before the certificate was written\n`)
		if code != 0 || !regexp.MustCompile(`^\d+ records, [01] repaired, 0 problems`).MatchString(leftover.ReplaceAllString(out, "")) {
			t.Errorf("trial %d: check after the re-run: exit %d\n%s%s", trial, code, out, errs)
		}
		checkRenewedOnce(t, dir, trial, certs)
	}
	t.Logf("%d of %d trials were killed after some successors were reported and before the last", partial, trials)
}

// checkRenewedOnce checks that every name has one original certificate,
// renewed by its one valid successor, which names it.
func checkRenewedOnce(t *testing.T, dir string, trial, certs int) {
	t.Helper()
	type rec struct {
		Serial, Name, Status string
		RenewalOf            string `json:"renewal_of"`
		RenewedBy            string `json:"renewed_by"`
	}
	byName := map[string][]rec{}
	for line := range strings.Lines(mustMinica(t, dir, "list", "--json")) {
		var r rec
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if r.Status == "valid" {
			byName[r.Name] = append(byName[r.Name], r)
		}
	}
	for i := 1; i <= certs; i++ {
		name := fmt.Sprintf("u%d", i)
		var old, succ []rec
		for _, r := range byName[name] {
			if r.RenewalOf == "" {
				old = append(old, r)
			} else {
				succ = append(succ, r)
			}
		}
		if len(old) != 1 || len(succ) != 1 || old[0].RenewedBy != succ[0].Serial || succ[0].RenewalOf != old[0].Serial {
			t.Errorf("trial %d: %s: originals %+v, successors %+v; want one of each, linked", trial, name, old, succ)
		}
	}
}

// killRenewal starts the renewal and kills it after a random number of
// reported successors or a random short delay; it returns the names
// reported renewed before the kill.
func killRenewal(t *testing.T, dir string, args []string, trial int) map[string]bool {
	t.Helper()
	cmd := exec.Command("minica", args...)
	cmd.Env = append(os.Environ(), "MINICA_DIR="+dir, "MINICA_TEST_BATCH_GROUP=3")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	reported := map[string]bool{}
	re := regexp.MustCompile(`^renewed client "(u\d+)"`)
	afterLines := -1
	timer := time.NewTimer(time.Hour)
	if trial%2 == 0 {
		afterLines = rand.IntN(8)
	} else {
		timer.Reset(time.Duration(rand.IntN(40)) * time.Millisecond)
	}
	kill := func() { cmd.Process.Signal(syscall.SIGKILL) }
	if afterLines == 0 {
		kill()
	}
	deadline := time.After(30 * time.Second)
loop:
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				break loop
			}
			if m := re.FindStringSubmatch(l); m != nil {
				reported[m[1]] = true
			}
			if len(reported) == afterLines {
				kill()
			}
		case <-timer.C:
			kill()
		case <-deadline:
			kill()
			t.Fatalf("trial %d: the renewal did not end within 30s", trial)
		}
	}
	timer.Stop()
	cmd.Wait()
	return reported
}

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

// A batch killed with SIGKILL at a random point leaves a CA directory that
// check passes or repairs, with a record for every certificate file; a
// re-run of the same command (after check, or straight away) issues
// exactly the rows that are missing and skips the others, saying so.
func TestIssueBatchKilled(t *testing.T) {
	t.Parallel()
	const trials, rows = 30, 12
	base := t.TempDir()
	var csv strings.Builder
	csv.WriteString("name,email\n")
	for i := 1; i <= rows; i++ {
		fmt.Fprintf(&csv, "u%d,u%d@example.com\n", i, i)
	}
	file := filepath.Join(base, "staff.csv")
	if err := os.WriteFile(file, []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	killedEarly, killedLate := 0, 0
	for trial := range trials {
		dir := filepath.Join(base, fmt.Sprintf("ca%d", trial))
		mustMinica(t, dir, "init", "--cn", "Root", "--no-password")
		reported := killBatch(t, dir, file, trial)
		if len(reported) == 0 {
			killedEarly++
		}
		if len(reported) == rows {
			killedLate++
		}
		// Half the trials run check first; the others re-run at once,
		// and the batch finishes the interrupted issuances itself.
		if trial%2 == 0 {
			out, errs, code := minica(t, dir, "check")
			if code != 0 {
				t.Fatalf("trial %d: check after the kill: exit %d\n%s%s", trial, code, out, errs)
			}
		}
		checkEveryCertHasRecord(t, dir, trial)
		valid := validNames(t, dir)
		for _, name := range reported {
			if !valid[name] {
				t.Errorf("trial %d: %s was reported issued before the kill but is not valid after it", trial, name)
			}
		}
		out, errs, code := minica(t, dir, "issue", "client", "--from", file)
		if code != 0 {
			t.Fatalf("trial %d: re-run: exit %d\n%s", trial, code, errs)
		}
		issued := regexp.MustCompile(`(?m)^issued client "(u\d+)"`).FindAllStringSubmatch(out, -1)
		skipped := regexp.MustCompile(`(?m)^skipped client "(u\d+)": issued by an earlier run`).FindAllStringSubmatch(out, -1)
		if len(issued)+len(skipped) != rows {
			t.Fatalf("trial %d: re-run issued %d and skipped %d of %d rows:\n%s", trial, len(issued), len(skipped), rows, out)
		}
		for _, m := range issued {
			if valid[m[1]] {
				t.Errorf("trial %d: re-run issued %s again", trial, m[1])
			}
		}
		skippedSet := map[string]bool{}
		for _, m := range skipped {
			skippedSet[m[1]] = true
			// Without check first, the re-run itself completes the
			// issuances whose certificates were synced, and skips them.
			if !valid[m[1]] && (trial%2 == 0 || !strings.Contains(errs, "completed the interrupted issuance of "+m[1]+" ")) {
				t.Errorf("trial %d: re-run skipped %s, which was not issued\n%s", trial, m[1], errs)
			}
		}
		for name := range valid {
			if !skippedSet[name] {
				t.Errorf("trial %d: re-run did not skip %s, which was issued", trial, name)
			}
		}
		// The re-run finishes what it finds through the name index; a
		// serial reserved by a kill just before it was indexed has no
		// certificate, and only check voids it.
		out, errs, code = minica(t, dir, "check")
		leftover := regexp.MustCompile(`(?m)^repaired: voided serial [0-9a-f]{32} of u\d+: its issuance was interrupted before the certificate was written\n`)
		if code != 0 || !regexp.MustCompile(`^\d+ records, 0 repaired, 0 problems`).MatchString(leftover.ReplaceAllString(out, "")) &&
			(trial%2 == 0 || !regexp.MustCompile(`^\d+ records, 1 repaired, 0 problems`).MatchString(leftover.ReplaceAllString(out, ""))) {
			t.Errorf("trial %d: check after the re-run: exit %d\n%s%s", trial, code, out, errs)
		}
		counts := map[string]int{}
		for _, r := range records(t, dir) {
			if r.Status == "valid" {
				counts[r.Name]++
			}
		}
		for i := 1; i <= rows; i++ {
			if n := counts[fmt.Sprintf("u%d", i)]; n != 1 {
				t.Errorf("trial %d: u%d has %d valid certificates; want 1", trial, i, n)
			}
		}
	}
	t.Logf("%d trials: %d killed before the first report, %d after the last", trials, killedEarly, killedLate)
}

// killBatch starts the batch and kills it, after a random number of
// reported certificates or a random short delay; it returns the names
// reported before the kill.
func killBatch(t *testing.T, dir, file string, trial int) []string {
	t.Helper()
	cmd := exec.Command("minica", "issue", "client", "--from", file)
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
	var reported []string
	re := regexp.MustCompile(`^issued client "(u\d+)"`)
	afterLines := -1
	timer := time.NewTimer(time.Hour)
	if trial%2 == 0 {
		afterLines = rand.IntN(12)
	} else {
		timer.Reset(time.Duration(rand.IntN(40)) * time.Millisecond)
	}
	kill := func() { cmd.Process.Signal(syscall.SIGKILL) }
	if afterLines == 0 {
		kill()
	}
loop:
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				break loop
			}
			if m := re.FindStringSubmatch(l); m != nil {
				reported = append(reported, m[1])
			}
			if len(reported) == afterLines {
				kill()
			}
		case <-timer.C:
			kill()
		case <-time.After(30 * time.Second):
			kill()
			t.Fatalf("trial %d: the batch did not end within 30s", trial)
		}
	}
	timer.Stop()
	cmd.Wait()
	return reported
}

type listRecord struct {
	Serial, Name, Status string
}

func records(t *testing.T, dir string) []listRecord {
	t.Helper()
	var recs []listRecord
	for line := range strings.Lines(mustMinica(t, dir, "list", "--json")) {
		var r listRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("list --json: %v", err)
		}
		recs = append(recs, r)
	}
	return recs
}

func validNames(t *testing.T, dir string) map[string]bool {
	valid := map[string]bool{}
	for _, r := range records(t, dir) {
		if r.Status == "valid" {
			valid[r.Name] = true
		}
	}
	return valid
}

// checkEveryCertHasRecord fails for a certificate file without a record.
func checkEveryCertHasRecord(t *testing.T, dir string, trial int) {
	t.Helper()
	have := map[string]bool{}
	for _, r := range records(t, dir) {
		have[r.Serial] = true
	}
	files, _ := filepath.Glob(filepath.Join(dir, "certs", "*", "*.crt"))
	for _, f := range files {
		serial := strings.TrimSuffix(filepath.Base(f), ".crt")
		if serial == "current" {
			continue
		}
		if !have[serial] {
			t.Errorf("trial %d: certificate %s has no record", trial, f)
		}
	}
}

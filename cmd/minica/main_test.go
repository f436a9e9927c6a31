package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"minica/internal/pgtest"
)

var update = flag.Bool("update", false, "rewrite testscript files with the actual output")

func TestMain(m *testing.M) {
	// A race-enabled binary sleeps a second at exit by default, so that
	// late reports get out; the tests run minica hundreds of times. Races
	// are still reported when they are detected.
	if os.Getenv("GORACE") == "" {
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	// MINICA_TEST_REAL runs minica itself, with the real terminal, for
	// tests that start it on a pseudo-terminal.
	if os.Getenv("MINICA_TEST_REAL") == "1" {
		os.Exit(run(context.Background(), append([]string{"minica"}, os.Args[1:]...), newEnv()))
	}
	testscript.Main(pgMain{m}, map[string]func(){
		"minica": func() { os.Exit(run(context.Background(), os.Args, testEnv())) },
	})
}

// testEnv is newEnv plus test-only hooks, read from variables that only the
// test binary honours: MINICA_TEST_NOW (RFC 3339) fixes the clock, and
// MINICA_TEST_TTY pretends a terminal is attached where the user types
// these answers, separated by "|", one per prompt (the last one repeats);
// the prompt is printed on stderr, on a line of its own.
func testEnv() *env {
	e := newEnv()
	if v := os.Getenv("MINICA_TEST_NOW"); v != "" {
		now, err := time.Parse(time.RFC3339, v)
		if err != nil {
			panic("MINICA_TEST_NOW: " + err.Error())
		}
		e.now = func() time.Time { return now }
	}
	if v := os.Getenv("MINICA_TEST_CLOCK"); v != "" {
		e.now, e.newTimer = scaledClock(v)
	}
	if typed := os.Getenv("MINICA_TEST_TTY"); typed != "" {
		answers := strings.Split(typed, "|")
		e.terminal = func() bool { return true }
		e.readSecret = func(prompt string) ([]byte, error) {
			fmt.Fprintln(e.stderr, prompt)
			pw := answers[0]
			if len(answers) > 1 {
				answers = answers[1:]
			}
			return []byte(pw), nil
		}
	} else {
		e.terminal = func() bool { return false }
	}
	// MINICA_TEST_STDOUT_TTY=1 pretends stdout is a terminal.
	e.stdoutTerminal = func() bool { return os.Getenv("MINICA_TEST_STDOUT_TTY") == "1" }
	// MINICA_TEST_BATCH_GROUP sets the group size of issue --from and renew
	// --expiring, so that small batches span several groups.
	if v := os.Getenv("MINICA_TEST_BATCH_GROUP"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			panic("MINICA_TEST_BATCH_GROUP: " + err.Error())
		}
		e.batchGroup = n
	}
	e.progress = func() io.Writer {
		if os.Getenv("MINICA_TEST_PROGRESS") == "1" {
			return e.stderr
		}
		return nil
	}
	return e
}

// scaledClock reads MINICA_TEST_CLOCK, "ORIGIN*SPEED" (ORIGIN in Unix
// nanoseconds): a clock that agrees with the real one at ORIGIN and runs
// SPEED times faster from then on, and timers that fire after a SPEEDth
// of their duration. Every process of a test given the same value shares
// one accelerated timeline, so that an hour of certificate lifetimes
// passes in a minute, through the same code as real time.
func scaledClock(v string) (func() time.Time, func(time.Duration) (<-chan time.Time, func() bool)) {
	o, sp, ok := strings.Cut(v, "*")
	ns, err1 := strconv.ParseInt(o, 10, 64)
	speed, err2 := strconv.ParseFloat(sp, 64)
	if !ok || err1 != nil || err2 != nil || speed < 1 {
		panic("MINICA_TEST_CLOCK: want ORIGIN*SPEED, got " + v)
	}
	origin := time.Unix(0, ns)
	now := func() time.Time {
		return origin.Add(time.Duration(float64(time.Since(origin)) * speed))
	}
	timer := func(d time.Duration) (<-chan time.Time, func() bool) {
		t := time.NewTimer(time.Duration(float64(d) / speed))
		return t.C, t.Stop
	}
	return now, timer
}

func TestScripts(t *testing.T) {
	// Parallel, so that the scripts (each already parallel to the others)
	// also run beside the package's other parallel tests, not in a phase
	// of their own.
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata",
		RequireExplicitExec: true,
		UpdateScripts:       *update,
		Cmds:                scriptCommands,
		Setup: func(env *testscript.Env) error {
			env.Setenv("MINICA_DIR", env.WorkDir+"/ca")
			env.Setenv("HOME", env.WorkDir+"/home")
			return nil
		},
	})
}

// pgMain stops the PostgreSQL server of the tests that started one (see
// internal/pgtest) once every test has run.
type pgMain struct{ m *testing.M }

func (p pgMain) Run() int {
	raiseParallel()
	return pgtest.Run(p.m.Run)
}

// raiseParallel lets 4 parallel tests run per CPU, unless -test.parallel
// was given. The tests of this package spend most of their time waiting
// for the processes they start (minica, servers, peers) and for the disk,
// not computing in the test binary: with go test's default, one test per
// CPU, the CPUs sat idle most of the time.
func raiseParallel() {
	if !flag.Parsed() {
		flag.Parse()
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", strconv.Itoa(4*runtime.GOMAXPROCS(0)))
	}
}

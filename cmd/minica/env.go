package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/term"
)

// env is everything a command touches outside its arguments, so that tests
// can replace it. Only main builds the real one.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	now            func() time.Time
	// newTimer makes the timers of long waits (the agent's); nil means
	// real ones. Tests scale them with the clock.
	newTimer func(time.Duration) (<-chan time.Time, func() bool)
	// terminal reports whether a no-echo password prompt is possible.
	terminal func() bool
	// stdoutTerminal reports whether stdout is a terminal (a person reads
	// it, not a log): enroll and token print their secret only there, or
	// as JSON (secretOnTerminal).
	stdoutTerminal func() bool
	// readSecret prompts on the terminal and reads a line without echo.
	readSecret func(prompt string) ([]byte, error)
	// progress returns where a progress bar goes: stderr when it is a
	// terminal, else nil (no bar on a pipe or in a file).
	progress func() io.Writer
	// batchGroup is the group size of issue --from; 0 is ca.BatchGroupSize.
	batchGroup int
}

func newEnv() *env {
	return &env{
		stdin:  os.Stdin,
		stdout: os.Stdout,
		stderr: os.Stderr,
		now:    time.Now,
		terminal: func() bool {
			return term.IsTerminal(int(os.Stdin.Fd())) && term.IsTerminal(int(os.Stderr.Fd()))
		},
		readSecret: func(prompt string) ([]byte, error) {
			return readTerminalSecret(os.Stdin, os.Stderr, prompt)
		},
		stdoutTerminal: func() bool { return term.IsTerminal(int(os.Stdout.Fd())) },
		progress: func() io.Writer {
			if term.IsTerminal(int(os.Stderr.Fd())) {
				return os.Stderr
			}
			return nil
		},
	}
}

// readTerminalSecret turns echo off, then prints prompt on w and reads a
// line from the terminal in: echo is off before the prompt shows, so that
// nothing typed after it is echoed. The terminal is put back as it was
// (echo on) when it returns, and when an interrupt (Ctrl-C), SIGTERM or
// SIGHUP arrives while it waits, which returns errInterrupted, instead of
// leaving the shell without echo. Only this function changes the
// terminal's state: the read itself leaves it alone, so a restore after
// an interrupt cannot be undone by a read that started late.
func readTerminalSecret(in *os.File, w io.Writer, prompt string) ([]byte, error) {
	fd := int(in.Fd())
	state, err := term.GetState(fd)
	if err != nil {
		return nil, err
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	if err := echoOff(fd); err != nil {
		term.Restore(fd, state)
		return nil, fmt.Errorf("turning off the terminal's echo: %w", err)
	}
	fmt.Fprint(w, prompt)
	defer fmt.Fprintln(w)
	type read struct {
		pw  []byte
		err error
	}
	done := make(chan read, 1)
	go func() {
		pw, err := readHidden(in)
		done <- read{pw, err}
	}()
	select {
	case r := <-done:
		if err := term.Restore(fd, state); err != nil && r.err == nil {
			return nil, fmt.Errorf("restoring the terminal: %w", err)
		}
		return r.pw, r.err
	case <-sigs:
		// The read stays blocked; minica exits right after.
		if err := term.Restore(fd, state); err != nil {
			return nil, fmt.Errorf("restoring the terminal: %w", err)
		}
		return nil, errInterrupted
	}
}

// readLine reads one line from r a byte at a time (so that nothing after
// it is consumed) and returns it without its line ending. A line ended by
// end of input is returned as it is; end of input before any byte is
// io.EOF.
func readLine(r io.Reader) ([]byte, error) {
	var line []byte
	var b [1]byte
	for {
		n, err := r.Read(b[:])
		if n == 1 {
			switch b[0] {
			case '\n':
				return line, nil
			case '\r':
			default:
				line = append(line, b[0])
			}
			continue
		}
		if err == io.EOF && len(line) > 0 {
			return line, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal pair: the controlling side and the
// terminal a child gets as its stdin, stdout and stderr.
func openPTY(t *testing.T) (ptm, pts *os.File) {
	t.Helper()
	// Non-blocking, so that reads obey deadlines.
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	ptm = os.NewFile(uintptr(fd), "/dev/ptmx")
	t.Cleanup(func() { ptm.Close() })
	if err := unix.IoctlSetPointerInt(int(ptm.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlocking the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetUint32(int(ptm.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("naming the pseudo-terminal: %v", err)
	}
	pts, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pts.Close() })
	return ptm, pts
}

func echoOn(t *testing.T, tty *os.File) bool {
	t.Helper()
	st, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	return st.Lflag&unix.ECHO != 0
}

// Ctrl-C at a password prompt puts the terminal back with echo on, and
// minica exits 130 with a message, whichever prompt it was.
func TestPromptInterruptRestoresTerminal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"init", []string{"init", "--cn", "Root"}},
		{"export --ask-password", []string{"export", "p12", "alice", "--ask-password"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ca")
			if tc.name != "init" {
				for _, args := range [][]string{{"init", "--cn", "Root", "--no-password"}, {"issue", "client", "alice"}} {
					e := testEnv()
					e.stdout = io.Discard
					if code := runInTest(context.Background(), append([]string{"minica", "--dir", dir}, args...), e); code != 0 {
						t.Fatalf("minica %v: exit %d", args, code)
					}
				}
			}
			ptm, pts := openPTY(t)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], append([]string{"--dir", dir}, tc.args...)...)
			cmd.Env = append(os.Environ(), "MINICA_TEST_REAL=1", "MINICA_PASSWORD=", "MINICA_P12_PASSWORD=")
			cmd.Stdin, cmd.Stdout, cmd.Stderr = pts, pts, pts
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Wait for the prompt, then for echo to go off.
			var out bytes.Buffer
			buf := make([]byte, 256)
			for !strings.Contains(out.String(), "password: ") {
				ptm.SetReadDeadline(time.Now().Add(10 * time.Second))
				n, err := ptm.Read(buf)
				if err != nil {
					t.Fatalf("waiting for the prompt: %v; read %q", err, out.String())
				}
				out.Write(buf[:n])
			}
			for i := 0; echoOn(t, pts); i++ {
				if i == 1000 {
					t.Fatal("echo is still on at the prompt")
				}
				time.Sleep(10 * time.Millisecond)
			}
			if _, err := ptm.Write([]byte{3}); err != nil { // Ctrl-C
				t.Fatal(err)
			}
			err := cmd.Wait()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 130 {
				t.Errorf("minica after Ctrl-C: %v; want exit status 130", err)
			}
			if !echoOn(t, pts) {
				t.Error("echo is off after Ctrl-C at the prompt; want it restored")
			}
			for i := 0; i < 100 && !strings.Contains(out.String(), "interrupted"); i++ {
				ptm.SetReadDeadline(time.Now().Add(5 * time.Second))
				n, err := ptm.Read(buf)
				out.Write(buf[:n])
				if err != nil {
					break
				}
			}
			if !strings.Contains(out.String(), "minica: error: reading password: interrupted") {
				t.Errorf("output %q; want the interruption reported", out.String())
			}
			if tc.name == "init" {
				if _, err := os.Stat(filepath.Join(dir, "ca.crt")); err == nil {
					t.Error("an interrupted init left a CA")
				}
			}
		})
	}
}

// Echo is off before the password prompt appears, so that a password typed
// the moment the prompt shows is never echoed. strace slows every ioctl of
// minica (the calls that turn echo off) so that a prompt printed first would
// be visible, echo still on, for a long while.
func TestPromptEchoOffBeforePrompt(t *testing.T) {
	t.Parallel()
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Fatal("strace is required (Debian package strace)")
	}
	dir := filepath.Join(t.TempDir(), "ca")
	ptm, pts := openPTY(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, strace, "-f", "-o", os.DevNull, "-e", "trace=ioctl", "-e", "inject=ioctl:delay_enter=300000",
		os.Args[0], "--dir", dir, "init", "--cn", "Root")
	cmd.Env = append(os.Environ(), "MINICA_TEST_REAL=1", "MINICA_PASSWORD=")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pts, pts, pts
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	buf := make([]byte, 256)
	waitFor := func(s string) {
		t.Helper()
		for !strings.Contains(out.String(), s) {
			ptm.SetReadDeadline(time.Now().Add(20 * time.Second))
			n, err := ptm.Read(buf)
			if err != nil {
				t.Fatalf("waiting for %q: %v; read %q", s, err, out.String())
			}
			out.Write(buf[:n])
		}
	}
	for _, prompt := range []string{"CA key password: ", "Repeat CA key password: "} {
		waitFor(prompt)
		if echoOn(t, pts) {
			t.Fatalf("echo is on while the prompt %q shows; want it off before the prompt", prompt)
		}
		if _, err := ptm.Write([]byte("typed-at-once\n")); err != nil {
			t.Fatal(err)
		}
		out.Reset()
	}
	waitFor("ca.crt")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("minica init: %v; output %q", err, out.String())
	}
	if strings.Contains(out.String(), "typed-at-once") {
		t.Errorf("the password was echoed: %q", out.String())
	}
	if !echoOn(t, pts) {
		t.Error("echo is off after the prompt; want it restored")
	}
}

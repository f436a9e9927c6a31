//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// echoOff turns off the echo of terminal fd as term.ReadPassword does for
// its read (echo off, line editing and signals on), so that the prompt can
// be printed after it: a password typed the moment the prompt shows is
// then never echoed. The caller restores the state it saved.
func echoOff(fd int) error {
	t, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
	if err != nil {
		return err
	}
	t.Lflag &^= unix.ECHO
	t.Lflag |= unix.ICANON | unix.ISIG
	t.Iflag |= unix.ICRNL
	return unix.IoctlSetTermios(fd, ioctlSetTermios, t)
}

// readHidden reads the password line from in, whose echo echoOff has
// turned off; the terminal's own line editing has applied erases.
func readHidden(in *os.File) ([]byte, error) { return readLine(in) }

package main

import (
	"os"

	"golang.org/x/sys/windows"
)

// echoOff turns off the echo of console fd as term.ReadPassword does for
// its read, so that the prompt can be printed after it. The caller
// restores the state it saved.
func echoOff(fd int) error {
	var mode uint32
	if err := windows.GetConsoleMode(windows.Handle(fd), &mode); err != nil {
		return err
	}
	mode &^= windows.ENABLE_ECHO_INPUT
	mode |= windows.ENABLE_PROCESSED_INPUT
	return windows.SetConsoleMode(windows.Handle(fd), mode)
}

// readHidden reads the password line from in, whose echo echoOff has
// turned off; the terminal's own line editing has applied erases.
func readHidden(in *os.File) ([]byte, error) { return readLine(in) }

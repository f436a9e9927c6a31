//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd || windows)

package main

import (
	"os"

	"golang.org/x/term"
)

// echoOff does nothing where minica does not know the terminal's
// interface: term.ReadPassword turns echo off for its read.
func echoOff(fd int) error { return nil }

// readHidden reads the password with term.ReadPassword, which turns echo
// off for its read where minica cannot.
func readHidden(in *os.File) ([]byte, error) { return term.ReadPassword(int(in.Fd())) }

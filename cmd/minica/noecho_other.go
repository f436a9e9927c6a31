//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd || windows)

package main

// echoOff does nothing where minica does not know the terminal's
// interface: term.ReadPassword turns echo off for its read.
func echoOff(fd int) error { return nil }

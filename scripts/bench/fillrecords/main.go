package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fillrecords", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "CA `directory` to fill (must hold a CA)")
	n := fs.Int("n", 1000000, "number of records to add")
	workers := fs.Int("workers", 8, "number of concurrent writers")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *dir == "" || fs.NArg() != 0 {
		fmt.Fprintln(stderr, "usage: fillrecords -dir CADIR [-n COUNT] [-workers W]")
		return 2
	}
	start := time.Now()
	if err := Fill(*dir, *n, *workers, time.Now()); err != nil {
		fmt.Fprintf(stderr, "fillrecords: error: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "added %d records to %s in %s\n", *n, *dir, time.Since(start).Round(time.Millisecond))
	return 0
}

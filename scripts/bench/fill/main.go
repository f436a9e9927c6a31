package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fill", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o Options
	fs.StringVar(&o.Dir, "dir", "", "CA `directory` to fill (must hold a CA)")
	fs.IntVar(&o.Records, "n", 1000, "number of records to add")
	fs.IntVar(&o.Revoked, "revoked", 1000, "how many of them are revoked")
	fs.StringVar(&o.Index, "index", "", "also write the revocations as an OpenSSL index.txt `file`")
	fs.IntVar(&o.Workers, "workers", 2*runtime.NumCPU(), "number of concurrent writers")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if o.Dir == "" || fs.NArg() != 0 {
		fmt.Fprintln(stderr, "usage: fill -dir CADIR [-n RECORDS] [-revoked K] [-index FILE] [-workers W]")
		return 2
	}
	o.Now = time.Now()
	start := time.Now()
	if err := Fill(o); err != nil {
		fmt.Fprintf(stderr, "fill: error: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "added %d records, %d revoked, to %s in %s\n", o.Records, o.Revoked, o.Dir, time.Since(start).Round(time.Millisecond))
	return 0
}

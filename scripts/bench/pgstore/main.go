// Command pgstore is the timing helper of scripts/bench/pgstore.sh: it runs
// a command with its standard output on a pipe, and measures how long the
// first line takes to come out, how long the whole output takes, how many
// lines there are, and the command's peak RSS (the kernel's maxrss of the
// child, what GNU time's %M reports).
//
//	pgstore -timeout 10m -- minica --dir CA list
//
// It prints one line, tab-separated: milliseconds to the first line, seconds
// to the end, lines, peak RSS in KiB. The output itself is read and
// dropped, so that the reader costs the command nothing: it never waits on
// a full pipe. A command that fails, or outlives -timeout, is an error.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"
)

func main() {
	timeout := flag.Duration("timeout", 10*time.Minute, "kill the command after this long")
	flag.Parse()
	if flag.NArg() == 0 || *timeout <= 0 || *timeout > time.Hour {
		fmt.Fprintln(os.Stderr, "pgstore: usage: pgstore [-timeout D up to 1h] -- COMMAND [ARGS]")
		os.Exit(2)
	}
	res, err := run(*timeout, flag.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgstore:", err)
		os.Exit(1)
	}
	fmt.Printf("%.2f\t%.3f\t%d\t%d\n", res.first.Seconds()*1000, res.total.Seconds(), res.lines, res.rssKiB)
}

type result struct {
	first, total time.Duration
	lines        int64
	rssKiB       int64
}

func run(timeout time.Duration, argv []string) (result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return result{}, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return result{}, err
	}
	var res result
	r := bufio.NewReaderSize(out, 1<<16)
	buf := make([]byte, 1<<16)
	for res.lines == 0 {
		line, err := r.ReadSlice('\n')
		if err == nil || len(line) > 0 && errors.Is(err, bufio.ErrBufferFull) {
			if err == nil {
				res.first = time.Since(start)
				res.lines = 1
			}
			continue
		}
		break // EOF or a read error before any line: the wait below says why
	}
	for res.lines > 0 {
		n, err := r.Read(buf)
		res.lines += int64(bytes.Count(buf[:n], []byte{'\n'}))
		if err == io.EOF {
			break
		}
		if err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			return result{}, err
		}
	}
	if err := cmd.Wait(); err != nil {
		return result{}, fmt.Errorf("%s: %w", argv[0], err)
	}
	if res.lines == 0 {
		return result{}, fmt.Errorf("%s printed no line", argv[0])
	}
	res.total = time.Since(start)
	res.rssKiB = maxRSSKiB(cmd.ProcessState)
	return res, nil
}

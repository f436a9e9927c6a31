// Command startup times two commands side by side, one process per run:
// A and B run in turn (A B, then B A, so that neither always follows the
// other), and each run's wall time (start to exit) and CPU time (user +
// system of the process, from the kernel's accounting) are taken. It
// prints, for each command, the median wall and CPU time of a run, and the
// medians over the pairs of A/B. On a shared machine one command's times
// move by tens of percent between runs; the ratio of runs that followed
// each other is the figure to read.
//
//	go run ./scripts/bench/startup -n 200 -a 'minica version' -b 'hello'
//
// In a command, {} is replaced by the number of the run (0, 1, ...), so
// that each run can name a new certificate. A command that exits non-zero
// stops the measure. Its output is discarded.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	n := flag.Int("n", 100, "runs of each command")
	warmup := flag.Int("warmup", 3, "runs of each command before the measured ones")
	a := flag.String("a", "", "command A (words split on spaces)")
	b := flag.String("b", "", "command B, the yardstick")
	flag.Parse()
	if *a == "" || *b == "" || *n < 1 {
		fmt.Fprintln(os.Stderr, "usage: startup [-n RUNS] [-warmup RUNS] -a 'COMMAND A' -b 'COMMAND B'")
		os.Exit(2)
	}
	for i := range *warmup {
		for _, c := range []string{*a, *b} {
			if _, err := run(c, -1-i); err != nil {
				fatal(err)
			}
		}
	}
	var ra, rb []sample
	for i := range *n {
		order := []string{*a, *b}
		if i%2 == 1 {
			order = []string{*b, *a}
		}
		for _, c := range order {
			s, err := run(c, i)
			if err != nil {
				fatal(err)
			}
			if c == *a {
				ra = append(ra, s)
			} else {
				rb = append(rb, s)
			}
		}
	}
	report("A", *a, ra)
	report("B", *b, rb)
	var wall, cpu []float64
	for i := range ra {
		wall = append(wall, float64(ra[i].wall)/float64(rb[i].wall))
		if rb[i].cpu > 0 {
			cpu = append(cpu, float64(ra[i].cpu)/float64(rb[i].cpu))
		}
	}
	fmt.Printf("A/B wall: median %.3f (quartiles %.3f to %.3f) over %d pairs\n", median(wall), quantile(wall, 0.25), quantile(wall, 0.75), len(wall))
	if len(cpu) > 0 {
		fmt.Printf("A/B cpu:  median %.3f (quartiles %.3f to %.3f) over %d pairs\n", median(cpu), quantile(cpu, 0.25), quantile(cpu, 0.75), len(cpu))
	}
}

type sample struct{ wall, cpu time.Duration }

// run runs command c once, as run number i.
func run(c string, i int) (sample, error) {
	words := strings.Fields(strings.ReplaceAll(c, "{}", strconv.Itoa(max(i, 0))))
	if i < 0 {
		words = strings.Fields(strings.ReplaceAll(c, "{}", "w"+strconv.Itoa(-i)))
	}
	cmd := exec.Command(words[0], words[1:]...)
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return sample{}, fmt.Errorf("%s: %w", strings.Join(words, " "), err)
	}
	ps := cmd.ProcessState
	return sample{time.Since(start), ps.UserTime() + ps.SystemTime()}, nil
}

func report(name, c string, s []sample) {
	var wall, cpu []float64
	for _, x := range s {
		wall = append(wall, float64(x.wall)/1e6)
		cpu = append(cpu, float64(x.cpu)/1e6)
	}
	fmt.Printf("%s: %s\n   wall ms: median %.3f (min %.3f)  cpu ms: median %.3f (min %.3f)\n",
		name, c, median(wall), slices.Min(wall), median(cpu), slices.Min(cpu))
}

func median(v []float64) float64 { return quantile(v, 0.5) }

func quantile(v []float64, q float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1)+0.5)]
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "startup:", err)
	os.Exit(1)
}

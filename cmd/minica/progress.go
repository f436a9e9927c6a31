package main

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// progressLine is the progress bar of a batch on a terminal: one line,
// "DESCRIPTION [=====     ] N/TOTAL", redrawn in place at most every
// progressEvery (and when the count reaches the total), erased by Finish
// so that the summary that follows stands alone. Write errors are
// ignored: the bar is a courtesy, the batch's results are reported
// elsewhere.
type progressLine struct {
	w        io.Writer
	desc     string
	n, total int
	drawn    time.Time // of the last draw; zero before the first
	width    int       // of the last line drawn, for Finish to erase
	now      func() time.Time
}

// progressEvery is the shortest time between two draws: often enough to
// look alive, seldom enough to cost nothing beside a certificate.
const progressEvery = 100 * time.Millisecond

// progressBarWidth is the number of cells between the brackets.
const progressBarWidth = 30

func newProgressLine(w io.Writer, total int, desc string) *progressLine {
	return &progressLine{w: w, total: total, desc: desc, now: time.Now}
}

// Describe replaces the description shown before the bar.
func (p *progressLine) Describe(desc string) { p.desc = desc }

// Add counts n more done and redraws the line when it is due.
func (p *progressLine) Add(n int) {
	p.n += n
	t := p.now()
	if !p.drawn.IsZero() && t.Sub(p.drawn) < progressEvery && p.n < p.total {
		return
	}
	p.drawn = t
	line := p.render()
	pad := ""
	if len(line) < p.width {
		pad = strings.Repeat(" ", p.width-len(line))
	}
	p.width = len(line)
	fmt.Fprintf(p.w, "\r%s%s", line, pad)
}

// render returns the line for the count so far.
func (p *progressLine) render() string {
	filled := progressBarWidth
	if p.total > 0 && p.n < p.total {
		filled = progressBarWidth * p.n / p.total
	}
	return fmt.Sprintf("%s [%s%s] %d/%d", p.desc,
		strings.Repeat("=", filled), strings.Repeat(" ", progressBarWidth-filled), p.n, p.total)
}

// Finish erases the line, if one was drawn.
func (p *progressLine) Finish() {
	if p.width > 0 {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.width))
		p.width = 0
	}
}

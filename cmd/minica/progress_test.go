package main

import (
	"strings"
	"testing"
	"time"
)

func TestProgressLine(t *testing.T) {
	var out strings.Builder
	p := newProgressLine(&out, 4, "issuing client certificates")
	clock := time.Unix(1e9, 0)
	p.now = func() time.Time { return clock }

	p.Add(1) // the first is drawn at once
	if got, want := out.String(), "\rissuing client certificates [=======                       ] 1/4"; got != want {
		t.Fatalf("after the first: %q, want %q", got, want)
	}
	out.Reset()
	clock = clock.Add(progressEvery / 2)
	p.Add(1) // too soon after the last draw
	if out.Len() != 0 {
		t.Fatalf("drawn again within %v: %q", progressEvery, out.String())
	}
	clock = clock.Add(progressEvery)
	p.Describe("renewing certificates") // shorter: the rest is blanked
	p.Add(1)
	if got, want := out.String(), "\rrenewing certificates [======================        ] 3/4      "; got != want {
		t.Fatalf("after the third: %q, want %q", got, want)
	}
	out.Reset()
	p.Add(1) // the last is drawn however soon it comes
	if got, want := out.String(), "\rrenewing certificates [==============================] 4/4"; got != want {
		t.Fatalf("at the total: %q, want %q", got, want)
	}
	out.Reset()
	p.Finish()
	if got, want := out.String(), "\r"+strings.Repeat(" ", len("renewing certificates [==============================] 4/4"))+"\r"; got != want {
		t.Fatalf("Finish wrote %q, want %q", got, want)
	}
	out.Reset()
	p.Finish()
	if out.Len() != 0 {
		t.Fatalf("a second Finish wrote %q", out.String())
	}
}

func TestProgressLineNothingDrawn(t *testing.T) {
	var out strings.Builder
	p := newProgressLine(&out, 0, "issuing client certificates")
	p.Finish() // an empty batch: no line to erase
	if out.Len() != 0 {
		t.Fatalf("Finish of an undrawn bar wrote %q", out.String())
	}
}

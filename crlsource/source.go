package crlsource

import (
	"context"
	"time"
)

// Source gives the bytes of a CRL file: one CRL (DER or PEM), or the PEM
// CRLs of several CAs. Its user (the proxy) parses and judges them; a
// Source judges nothing. [Files] reads files, a [Follower] follows a URL.
type Source interface {
	// Current returns the bytes as they are now: files are read again,
	// a followed URL gives the CRL taken last. It is safe to call from
	// any goroutine.
	Current() ([]byte, error)
}

// Summed is a Source that tells the SHA-256 of the bytes Current returns
// without them, so that its user sees that they did not change without
// reading them again. A Follower is one: it lets go of the bytes of a CRL
// once they are judged.
type Summed interface {
	Source
	Sum() ([32]byte, error)
}

// Followed is a Source that brings new CRLs by itself, as a Follower does:
// its user runs Follow, and judges each new CRL as the Sink.
type Followed interface {
	Source
	// Follow brings new CRLs until ctx is done, telling sink of each, and
	// of every fetch.
	Follow(ctx context.Context, sink Sink)
}

// Sink is the user of a Followed source, told of what it brings.
type Sink interface {
	// Changed says that Current now returns new bytes, for the sink to
	// judge. A non-nil error refuses them: Current goes back to the
	// previous ones. A *Refusal names the reason.
	Changed() error
	// Fetched hears of each fetch that brought the CRL taken or confirmed
	// it (304), at its time.
	Fetched(at time.Time)
	// FetchFailed hears of each fetch that failed, or whose CRL Changed
	// refused, with its reason: a Reason constant or the Refusal's.
	FetchFailed(reason string, err error)
}

// Refusal is the error of Sink.Changed that refuses a CRL, with the
// reason the sink names, a label for logs and metrics.
type Refusal struct {
	Reason string
	Err    error
}

func (r *Refusal) Error() string { return r.Err.Error() }

func (r *Refusal) Unwrap() error { return r.Err }

// DeltaSink is a Sink that applies delta CRLs (RFC 5280 section 5.2.4) to
// the complete CRL it holds. A Follower following for a DeltaSink asks its
// server for the delta against the complete CRL the sink holds.
type DeltaSink interface {
	Sink
	// Base returns the decimal CRL number of the complete CRL the sink
	// holds and has verified (not of a delta applied to it), "" when it
	// takes no delta: the Follower then asks for the complete CRL.
	Base() string
}

// DeltaSource is a Source that may hold, beside the complete CRL Current
// gives, the last delta CRL its server sent against it. A Follower is one.
type DeltaSource interface {
	Summed
	// Delta returns the delta CRL held, nil for none, and the SHA-256 of
	// the complete CRL it is held beside: a user that read Current before
	// a new complete CRL replaced it sees that the delta is not for that
	// one. The bytes are the source's, not to be changed.
	Delta() (data []byte, base [32]byte)
}

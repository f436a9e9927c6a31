package ca

// marked is an error that also matches a sentinel (errors.Is) without the
// sentinel's words in its text: the text states what happened, and a
// caller that branches on the kind of failure asks errors.Is.
type marked struct {
	error
	sentinel error
}

func (m marked) Is(target error) bool { return target == m.sentinel }
func (m marked) Unwrap() error        { return m.error }

// mark returns err, matching sentinel too.
func mark(err, sentinel error) error { return marked{err, sentinel} }

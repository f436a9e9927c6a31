// Package httpreply holds an HTTP answer as data, built once by a handler
// and written by whichever HTTP server carries the request: net/http, or
// the dedicated OCSP listener's fasthttp server (serve/internal/fastocsp).
// It is how the OCSP responder answers both without knowing either.
package httpreply

// MaxFields bounds the header fields of a Reply: an OCSP answer has
// at most seven.
const MaxFields = 8

// Field is one header field, its name in canonical form. The values may be
// shared between replies: writers only read them.
type Field struct {
	Name   string
	Values []string
}

// Reply is the status, header fields and body of one answer. The Date
// field is the server's to add.
type Reply struct {
	Status int
	Body   []byte
	fields [MaxFields]Field
	n      int
}

// Set adds the field name with vals. It panics beyond MaxFields fields.
func (a *Reply) Set(name string, vals []string) {
	a.fields[a.n] = Field{name, vals}
	a.n++
}

// Fields returns the fields set, in the order they were set.
func (a *Reply) Fields() []Field { return a.fields[:a.n] }

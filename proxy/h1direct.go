package proxy

import (
	"fmt"
	"net/http"
	"net/http/httputil"

	"minica/identity"
	"minica/internal/httptoken"
	"minica/proxy/internal/h1direct"
)

// forwardDirect forwards r, which the h1direct Transport t of rp takes,
// by t's direct way (see package h1direct) with x's identity headers.
func (p *Proxy) forwardDirect(rp *httputil.ReverseProxy, t *h1direct.Transport, w http.ResponseWriter, r *http.Request, x *exchange, dr *directRewriter) {
	if err := checkRendered(x.ci, x.headers); err != nil {
		rp.ErrorHandler(w, r, err)
		return
	}
	dr.p, dr.headers = p, x.headers
	t.Forward(rp, w, r, dr)
}

// directRewriter is the proxy's part of a request of the direct way,
// where rewrite is ReverseProxy's: the reserved names, and the proxy's
// own fields.
type directRewriter struct {
	p       *Proxy
	headers []identity.Header // the identity headers
}

func (d *directRewriter) Reserved(name string) bool { return d.p.reserved.Holds(name) }

func (d *directRewriter) SetHeaders(out http.Header, in *http.Request, values []string) []string {
	return d.p.setOwnHeaders(out, in, d.headers, values)
}

// checkRendered checks the identity headers of ci once for each rendering
// (they are rendered once per connection, and again when its days left
// change), as net/http's Transport checks a request's fields, which the
// direct way leaves to its Rewriter for these.
func checkRendered(ci *conn, headers []identity.Header) error {
	if len(headers) == 0 || ci.checked.Load() == &headers[0] {
		return nil
	}
	for _, h := range headers {
		if !httptoken.Valid(h.Name) {
			return fmt.Errorf("net/http: invalid header field name %q", h.Name)
		}
		if !h1direct.ValidFieldValue(h.Value) {
			return fmt.Errorf("net/http: invalid header field value for %q", h.Name)
		}
	}
	ci.checked.Store(&headers[0])
	return nil
}

package h1direct

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"mime"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"net/url"
	"os"
	"strings"
	"sync"

	"minica/internal/httptoken"
)

// Rewriter is what the direct way asks of the proxy for the header of one
// outbound request, where httputil.ReverseProxy calls its Rewrite.
type Rewriter interface {
	// Reserved reports whether the client's header field name (in
	// canonical form) is one the proxy sets itself or strips: it is not
	// forwarded.
	Reserved(name string) bool
	// SetHeaders sets the proxy's own fields of the request in to out,
	// taking the values' room from values (which it may grow), and
	// returns values; the fields are already checked as the outbound
	// check of net/http's Transport would check them.
	SetHeaders(out http.Header, in *http.Request, values []string) []string
}

// Takes reports whether r, a request a ReverseProxy with t for its
// Transport got, can be forwarded directly: no body, no Upgrade, no
// trailers, a plain http upstream on a platform that checks idle
// connections, and a query that ReverseProxy would forward unchanged.
func (t *Transport) Takes(r *http.Request) bool {
	if t.target == nil || t.target.Scheme != "http" || !canCheckIdle {
		return false
	}
	if r.ContentLength != 0 || r.Body != nil && r.Body != http.NoBody ||
		len(r.Trailer) > 0 || len(r.TransferEncoding) > 0 {
		return false
	}
	if _, ok := r.Header["Upgrade"]; ok {
		return false
	}
	return queryKept(r.URL.RawQuery)
}

// queryReencoded is set when GODEBUG asks ReverseProxy to re-encode every
// query (urlmaxqueryparams): such requests go through ReverseProxy.
var queryReencoded = strings.Contains(os.Getenv("GODEBUG"), "urlmaxqueryparams")

// queryKept reports whether ReverseProxy forwards the query q as it is:
// it re-encodes one with a ';', a bad escape or over 10,000 parameters.
func queryKept(q string) bool {
	if queryReencoded {
		return false
	}
	if strings.Count(q, "&") >= 10000-1 {
		return false
	}
	for i := 0; i < len(q); i++ {
		switch q[i] {
		case ';':
			return false
		case '%':
			if i+2 >= len(q) || !ishex(q[i+1]) || !ishex(q[i+2]) {
				return false
			}
		}
	}
	return true
}

func ishex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// hopHeaders are the hop-by-hop headers ReverseProxy removes both ways,
// beside those named in Connection (RFC 9110 7.6.1).
var hopHeaders = map[string]bool{
	"Connection": true, "Proxy-Connection": true, "Keep-Alive": true,
	"Proxy-Authenticate": true, "Proxy-Authorization": true, "Te": true,
	"Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
}

// forwarded are the headers ReverseProxy removes from a request before
// Rewrite, which sets its own.
var forwarded = map[string]bool{
	"Forwarded": true, "X-Forwarded-For": true, "X-Forwarded-Host": true, "X-Forwarded-Proto": true,
}

// connectionListed returns the canonical names the Connection values vs
// list, as ReverseProxy deletes them.
func connectionListed(vs []string) []string {
	var names []string
	for _, f := range vs {
		for sf := range strings.SplitSeq(f, ",") {
			if sf = textproto.TrimString(sf); sf != "" {
				names = append(names, textproto.CanonicalMIMEHeaderKey(sf))
			}
		}
	}
	return names
}

// outHeader is the request header the upstream gets: r's, but its
// hop-by-hop, X-Forwarded-* and reserved headers, with the proxy's own
// set by rw. The fields that come from the client are checked as
// net/http's Transport checks them. The header, and the values the proxy
// sets, are o's, kept from its last request.
func outHeader(o *outBuf, r *http.Request, rw Rewriter) (http.Header, error) {
	listed := connectionListed(r.Header["Connection"])
	out := o.header
	if out == nil {
		out = make(http.Header, len(r.Header)+8)
		o.header = out
	}
	for k, vs := range r.Header {
		if hopHeaders[k] || forwarded[k] || rw.Reserved(k) || contains(listed, k) {
			continue
		}
		if !httptoken.Valid(k) {
			return nil, fmt.Errorf("net/http: invalid header field name %q", k)
		}
		for _, v := range vs {
			if !ValidFieldValue(v) {
				return nil, fmt.Errorf("net/http: invalid header field value for %q", k)
			}
		}
		out[k] = vs
	}
	if !ValidFieldValue(r.Host) {
		return nil, errors.New(`net/http: invalid header field value for "X-Forwarded-Host"`)
	}
	if !ValidFieldValue(r.RemoteAddr) {
		return nil, errors.New(`net/http: invalid header field value for "X-Forwarded-For"`)
	}
	if headerValuesContainsToken(r.Header["Te"], "trailers") && !rw.Reserved("Te") {
		out["Te"] = []string{"trailers"}
	}
	o.values = rw.SetHeaders(out, r, o.values[:0])
	if _, ok := out["User-Agent"]; !ok {
		out["User-Agent"] = []string{""} // as ReverseProxy: no Go default
	}
	return out, nil
}

func contains(names []string, k string) bool {
	for _, n := range names {
		if n == k {
			return true
		}
	}
	return false
}

// headerValuesContainsToken reports whether any of vs, a comma-separated
// list, holds token (ASCII case-insensitive), as golang.org/x/net's
// httpguts does for ReverseProxy.
func headerValuesContainsToken(vs []string, token string) bool {
	for _, v := range vs {
		for f := range strings.SplitSeq(v, ",") {
			if tokenEqual(strings.Trim(f, " \t"), token) {
				return true
			}
		}
	}
	return false
}

func tokenEqual(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if a[i] >= 0x80 || lowerByte(a[i]) != lowerByte(b[i]) {
			return false
		}
	}
	return true
}

func lowerByte(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// outBuf holds an outbound request of the direct way, its URL and its
// header, reused through outBufs (see Forward): a request allocates none
// of them.
type outBuf struct {
	req    http.Request
	u      url.URL
	header http.Header // emptied between requests, its room kept
	values []string    // the backing array of the values the proxy sets
	w      writer1xx   // passes the request's 1xx answers on
}

var outBufs = sync.Pool{New: func() any { return new(outBuf) }}

// maxPooledHeader is the most fields of a header that outBufs keeps the
// room of: a request with more, rare, does not make every later one
// clear a large map.
const maxPooledHeader = 64

// reset empties o for its next request.
func (o *outBuf) reset() {
	h, v := o.header, o.values
	if len(h) > maxPooledHeader {
		h = nil
	}
	clear(h)
	clear(v[:cap(v)]) // keeps no value alive
	*o = outBuf{header: h, values: v[:0]}
}

// fillOutRequest makes in o the request the upstream target gets for r,
// as ReverseProxy's clone and rewrite make it: the URL joined to
// target's, r's Host, no body, the header of outHeader.
func fillOutRequest(o *outBuf, r *http.Request, target *url.URL, rw Rewriter) (*http.Request, error) {
	out := &o.req
	*out = *r // the context too
	o.u = *r.URL
	u := &o.u
	u.Scheme, u.Host = target.Scheme, target.Host
	u.Path, u.RawPath = joinURLPath(target, r.URL)
	if target.RawQuery != "" && u.RawQuery != "" {
		u.RawQuery = target.RawQuery + "&" + u.RawQuery
	} else {
		u.RawQuery = target.RawQuery + u.RawQuery
	}
	out.URL = u
	out.Host = r.Host
	out.Body, out.Close = nil, false
	var err error
	out.Header, err = outHeader(o, r, rw)
	return out, err
}

// joinURLPath is ReverseProxy's join of the target's path and the
// request's.
func joinURLPath(a, b *url.URL) (path, rawpath string) {
	if a.RawPath == "" && b.RawPath == "" {
		return singleJoiningSlash(a.Path, b.Path), ""
	}
	apath, bpath := a.EscapedPath(), b.EscapedPath()
	aslash, bslash := strings.HasSuffix(apath, "/"), strings.HasPrefix(bpath, "/")
	switch {
	case aslash && bslash:
		return a.Path + b.Path[1:], apath + bpath[1:]
	case !aslash && !bslash:
		return a.Path + "/" + b.Path, apath + "/" + bpath
	}
	return a.Path + b.Path, apath + bpath
}

func singleJoiningSlash(a, b string) string {
	aslash, bslash := strings.HasSuffix(a, "/"), strings.HasPrefix(b, "/")
	switch {
	case aslash && bslash:
		return a + b[1:]
	case !aslash && !bslash:
		return a + "/" + b
	}
	return a + b
}

// Forward sends r, which t Takes, to t's upstream and copies the answer
// to w, as rp.ServeHTTP does with rw for its Rewrite and t for its
// Transport: 1xx answers passed on, the answer's hop-by-hop headers
// removed, trailers announced and copied, the body flushed at each write
// when it has no length or is an event stream, an upstream error
// answered by rp's ErrorHandler (rp must have one), and a body cut
// midway aborting the client's response (http.ErrAbortHandler).
//
// The outbound request, with its header, is taken from outBufs and put
// back when Forward returns: nothing keeps it (the answer's Request field
// goes with the answer, its body does not point to it, and ErrorHandler
// keeps neither).
func (t *Transport) Forward(rp *httputil.ReverseProxy, w http.ResponseWriter, r *http.Request, rw Rewriter) {
	o := outBufs.Get().(*outBuf)
	defer func() {
		o.reset()
		outBufs.Put(o)
	}()
	out, err := fillOutRequest(o, r, t.target, rw)
	if err != nil {
		rp.ErrorHandler(w, out, err)
		return
	}
	o.w.ResponseWriter = w
	res, err := t.roundTrip(out, &o.w, writeHead)
	if err != nil {
		rp.ErrorHandler(w, out, err)
		return
	}
	removeHopByHop(res.Header)
	dst := w.Header()
	for k, vs := range res.Header {
		if len(dst[k]) == 0 {
			dst[k] = vs[:len(vs):len(vs)] // an append copies
		} else {
			dst[k] = append(dst[k], vs...)
		}
	}
	announced := len(res.Trailer)
	if announced > 0 {
		keys := make([]string, 0, announced)
		for k := range res.Trailer {
			keys = append(keys, k)
		}
		dst.Add("Trailer", strings.Join(keys, ", "))
	}
	w.WriteHeader(res.StatusCode)
	if err := copyBody(rp, w, res); err != nil {
		res.Body.Close()
		if r.Context().Value(http.ServerContextKey) == nil {
			logf(rp, "suppressing panic for copyResponse error in test; copy error: %v", err)
			return
		}
		panic(http.ErrAbortHandler)
	}
	res.Body.Close() // fills res.Trailer
	if len(res.Trailer) > 0 {
		http.NewResponseController(w).Flush() // chunked, so that trailers follow
	}
	if len(res.Trailer) == announced {
		copyHeader(dst, res.Trailer)
		return
	}
	for k, vs := range res.Trailer {
		for _, v := range vs {
			dst.Add(http.TrailerPrefix+k, v)
		}
	}
}

// writer1xx passes the informational answers to a request on to its
// client, as ReverseProxy does.
type writer1xx struct{ http.ResponseWriter }

func (w *writer1xx) got1xx(code int, h textproto.MIMEHeader) error {
	dst := w.Header()
	copyHeader(dst, http.Header(h))
	w.WriteHeader(code)
	clear(dst) // WriteHeader keeps the header for the final answer
	return nil
}

// removeHopByHop removes the hop-by-hop headers of h, those named in its
// Connection header included.
func removeHopByHop(h http.Header) {
	for _, n := range connectionListed(h["Connection"]) {
		delete(h, n)
	}
	for n := range h { // an answer has fewer fields than hopHeaders
		if hopHeaders[n] {
			delete(h, n)
		}
	}
}

func copyHeader(dst, src http.Header) {
	for k, vs := range src {
		for _, v := range vs {
			dst.Add(k, v)
		}
	}
}

// copyBody copies res's body to w in a buffer of buffers,
// flushing after each write (and once before the first) when ReverseProxy
// would flush at once: an event stream, or a body of unknown length.
func copyBody(rp *httputil.ReverseProxy, w http.ResponseWriter, res *http.Response) error {
	flush := res.ContentLength == -1 || eventStream(res.Header.Get("Content-Type"))
	var rc *http.ResponseController
	if flush {
		rc = http.NewResponseController(w)
		rc.Flush()
	}
	bp := buffers.Get().(*[]byte)
	defer buffers.Put(bp)
	buf := *bp
	for {
		nr, rerr := res.Body.Read(buf)
		if rerr != nil && rerr != io.EOF && rerr != context.Canceled {
			logf(rp, "httputil: ReverseProxy read error during body copy: %v", rerr)
		}
		if nr > 0 {
			nw, werr := w.Write(buf[:nr])
			if flush {
				rc.Flush()
			}
			if werr != nil {
				return werr
			}
			if nw != nr {
				return io.ErrShortWrite
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// eventStream reports whether the media type of ct is text/event-stream,
// parsing it only when it might be.
func eventStream(ct string) bool {
	if !strings.Contains(strings.ToLower(ct), "event-stream") {
		return false
	}
	mt, _, _ := mime.ParseMediaType(ct)
	return mt == "text/event-stream"
}

// buffers holds the buffers copyBody copies answers' bodies in.
var buffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func logf(rp *httputil.ReverseProxy, format string, args ...any) {
	if rp.ErrorLog != nil {
		rp.ErrorLog.Printf(format, args...)
	} else {
		log.Printf(format, args...)
	}
}

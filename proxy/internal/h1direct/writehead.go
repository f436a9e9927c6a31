package h1direct

import (
	"bufio"
	"net/http"
	"net/textproto"
)

// writeHead writes the head of r, a request of the short way (no body, no
// trailers) whose header names and values are checked already (see
// outHeader, checkRendered, checkOutHeaders), as r.Write(w) writes it but
// for the order of the header fields: Request.Write sorts the names, and
// the order of fields of different names carries no meaning (RFC 9110
// 5.3); the values of one name keep their order. Names and values are
// written as they are, trimmed as Request.Write trims them: a value
// holds no CR or LF, so its newline replacer would change nothing.
// Anything this does not write itself (a body, Close, CONNECT, a Host
// that is not plain ASCII host characters, a request URI with a control
// byte) goes to r.Write, which also refuses what must be refused.
// It calls no httptrace hook: the direct way (see forward), its only
// user, has no client trace. TestWriteHeadAsRequestWrite and
// FuzzWriteHead compare it with Request.Write.
func writeHead(w *bufio.Writer, r *http.Request) error {
	host := r.Host
	if host == "" {
		host = r.URL.Host
	}
	ruri := r.URL.RequestURI()
	if r.Body != nil && r.Body != http.NoBody || r.ContentLength != 0 || r.Close ||
		len(r.TransferEncoding) > 0 || r.Trailer != nil || r.Method == "CONNECT" ||
		!plainHost(host) || !noCTL(ruri) {
		return r.Write(w)
	}
	method := r.Method
	if method == "" {
		method = "GET"
	}
	w.WriteString(method)
	w.WriteByte(' ')
	w.WriteString(ruri)
	w.WriteString(" HTTP/1.1\r\nHost: ")
	w.WriteString(host)
	w.WriteString("\r\n")
	ua := defaultUserAgent // unless the header has one, maybe empty
	if vs, ok := r.Header["User-Agent"]; ok {
		ua = ""
		if len(vs) > 0 {
			ua = vs[0]
		}
	}
	if ua != "" { // trimmed after the test, as Request.Write does
		writeField(w, "User-Agent", textproto.TrimString(ua))
	}
	if method == "POST" || method == "PUT" || method == "PATCH" {
		w.WriteString("Content-Length: 0\r\n") // as Request.Write, without a body
	}
	for k, vs := range r.Header {
		switch k {
		case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer":
			continue // Request.Write writes its own, or none
		}
		for _, v := range vs {
			writeField(w, k, textproto.TrimString(v))
		}
	}
	_, err := w.WriteString("\r\n")
	return err
}

// defaultUserAgent is the User-Agent Request.Write sends when the header
// has none.
const defaultUserAgent = "Go-http-client/1.1"

func writeField(w *bufio.Writer, name, value string) {
	w.WriteString(name)
	w.WriteString(": ")
	w.WriteString(value)
	w.WriteString("\r\n")
}

// plainHost reports whether host is not empty and made only of letters,
// digits and ".-_:[]", which Request.Write sends as they are (no punycode, no IPv6
// zone to remove, a valid Host field).
func plainHost(host string) bool {
	if host == "" {
		return false // Request.Write refuses it
	}
	for i := 0; i < len(host); i++ {
		c := host[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '.' || c == '-' || c == '_' || c == ':' || c == '[' || c == ']') {
			return false
		}
	}
	return true
}

// noCTL reports whether s holds no ASCII control byte and no DEL.
func noCTL(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c == 0x7f {
			return false
		}
	}
	return true
}

package crlsource

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of the HTTP limits, used when a field is zero.
const (
	DefaultMaxBytes      = 64 << 20
	DefaultDialTimeout   = 10 * time.Second
	DefaultHeaderTimeout = 30 * time.Second
	DefaultBodyTimeout   = 60 * time.Second
	// MaxWait is the longest long-poll wait asked of a server, the bound
	// `minica serve` honours.
	MaxWait = 60 * time.Second
)

// Reasons of a failed fetch, as FetchError.Reason.
const (
	ReasonConnect  = "connect"     // the server could not be reached
	ReasonTLS      = "tls"         // the TLS handshake failed: a certificate that does not verify
	ReasonTimeout  = "timeout"     // dial, headers or body took too long
	ReasonStatus   = "http-status" // a status other than 200 or 304
	ReasonTooLarge = "too-large"   // a body beyond MaxBytes
	ReasonBody     = "body"        // the body broke off (shorter than its Content-Length)
	ReasonRequest  = "request"     // the URL or the request is unusable
	ReasonProtocol = "protocol"    // a delta CRL not asked for, or a malformed HeaderDelta
)

// The headers of the delta protocol of `minica serve` (see docs/proxy.md,
// "Delta CRLs"). A client that can apply delta CRLs sends HeaderBase with
// the decimal number of the complete CRL it holds and has verified; the
// server may then answer with its current delta CRL against a base at most
// that number, saying so with HeaderDelta: "base=B", B the delta's base.
const (
	HeaderBase  = "Minica-CRL-Base"
	HeaderDelta = "Minica-Delta-CRL"
)

// FetchError is a fetch that brought no CRL, with the Reason it failed for.
type FetchError struct {
	Reason string
	URL    string
	Err    error
}

func (e *FetchError) Error() string {
	err := e.Err
	// net/http's *url.Error repeats the method and the URL said here.
	if ue, ok := err.(*url.Error); ok && ue.URL == e.URL {
		err = ue.Err
	}
	return fmt.Sprintf("fetching CRL %q: %v", e.URL, err)
}

func (e *FetchError) Unwrap() error { return e.Err }

// errTooLarge is a body beyond HTTP.MaxBytes.
var errTooLarge = errors.New("response body too large")

// HTTP fetches a CRL from URL. Its zero limits are the Default constants.
// An HTTP is safe for concurrent use once its fields are set.
type HTTP struct {
	URL string
	// RootCAs verifies an https server; nil means the system roots.
	RootCAs *x509.CertPool
	// MaxBytes bounds the body.
	MaxBytes int64
	// DialTimeout bounds connecting (with the TLS handshake);
	// HeaderTimeout the wait for the response headers beyond a long-poll
	// wait; BodyTimeout the whole body, once the headers are in.
	DialTimeout, HeaderTimeout, BodyTimeout time.Duration

	once   sync.Once
	client *http.Client
	// spare is the body buffer of a failed fetch, kept for the retries
	// that follow it (see bodyBuffer).
	spareMu sync.Mutex
	spare   *bodyBuffer
}

// Held is the copy of the CRL a client holds, for a conditional GET.
type Held struct {
	// Data is the CRL, DER or PEM; nil for none.
	Data []byte
	// Tag is Tag(Data), for a client that keeps the tag and not the CRL:
	// when set, it is sent and Data is not read.
	Tag string
	// ETag is the server's tag of Data when it sent one.
	ETag string
	// LastModified is the server's Last-Modified of Data, zero if unknown.
	LastModified time.Time
	// Base is the decimal number of the complete CRL held, sent as
	// HeaderBase so that the server may answer with a delta CRL; "" for
	// none, to get the complete CRL.
	Base string
}

// Response is the answer to a fetch.
type Response struct {
	// NotModified is a 304: the held copy is current. Data is nil then.
	NotModified bool
	// Data is the body of a 200.
	Data []byte
	// ETag and LastModified are the server's, of Data.
	ETag         string
	LastModified time.Time
	// Delta is whether Data is a delta CRL against the complete CRL of
	// Held.Base or an earlier one (HeaderDelta), not a complete CRL.
	Delta bool
	// WaitApplied is whether the server honoured Prefer: wait
	// (Preference-Applied, with a wait above 0), so that it can be asked
	// again at once.
	WaitApplied bool
}

// Tag returns the strong ETag `minica serve` gives a CRL:
// "sha256:<lowercase hex>" of its DER, in quotes. PEM is decoded first.
func Tag(data []byte) string {
	sum := sha256.Sum256(DER(data))
	return `"sha256:` + hex.EncodeToString(sum[:]) + `"`
}

// DER returns the DER of a PEM "X509 CRL" block in data, else data.
func DER(data []byte) []byte {
	if b, _ := pem.Decode(data); b != nil && b.Type == "X509 CRL" {
		return b.Bytes
	}
	return data
}

// CheckURL tells whether raw is an http or https URL with a host.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%q is not an http or https URL", raw)
	}
	if u.Host == "" {
		return fmt.Errorf("%q has no host", raw)
	}
	return nil
}

func (h *HTTP) limits() (maxBytes int64, dial, header, body time.Duration) {
	maxBytes, dial, header, body = h.MaxBytes, h.DialTimeout, h.HeaderTimeout, h.BodyTimeout
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	if dial <= 0 {
		dial = DefaultDialTimeout
	}
	if header <= 0 {
		header = DefaultHeaderTimeout
	}
	if body <= 0 {
		body = DefaultBodyTimeout
	}
	return
}

func (h *HTTP) httpClient() *http.Client {
	h.once.Do(h.newClient)
	return h.client
}

func (h *HTTP) newClient() {
	_, dial, _, _ := h.limits()
	d := &net.Dialer{Timeout: dial, KeepAlive: 30 * time.Second}
	h.client = &http.Client{
		Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			DialContext:         d.DialContext,
			TLSClientConfig:     &tls.Config{RootCAs: h.RootCAs, MinVersion: tls.VersionTLS12},
			TLSHandshakeTimeout: dial,
			MaxIdleConns:        2,
			IdleConnTimeout:     MaxWait + 30*time.Second,
			// Compression would hide the body's size from MaxBytes.
			DisableCompression: true,
		},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("more than 5 redirects")
			}
			return nil
		},
	}
}

// Fetch makes one conditional GET against held, asking the server to hold
// the request up to wait for a newer CRL (Prefer: wait, when positive;
// capped at MaxWait). The error is a *FetchError.
func (h *HTTP) Fetch(ctx context.Context, held Held, wait time.Duration) (*Response, error) {
	maxBytes, _, headerTimeout, bodyTimeout := h.limits()
	wait = min(wait, MaxWait)
	fail := func(reason string, err error) (*Response, error) {
		return nil, &FetchError{Reason: reason, URL: h.URL, Err: err}
	}
	if err := CheckURL(h.URL); err != nil {
		return fail(ReasonRequest, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.URL, nil)
	if err != nil {
		return fail(ReasonRequest, err)
	}
	if tags := held.tag(); tags != "" {
		if held.ETag != "" && held.ETag != tags {
			tags += ", " + held.ETag
		}
		req.Header.Set("If-None-Match", tags)
		if !held.LastModified.IsZero() {
			req.Header.Set("If-Modified-Since", held.LastModified.UTC().Format(http.TimeFormat))
		}
	}
	if held.Base != "" {
		req.Header.Set(HeaderBase, held.Base)
	}
	if wait > 0 {
		req.Header.Set("Prefer", "wait="+strconv.Itoa(int(wait/time.Second)))
	}
	// The headers must come within the long-poll wait plus HeaderTimeout,
	// and the whole body within BodyTimeout after them.
	var timedOut atomic.Bool
	expire := func() { timedOut.Store(true); cancel() }
	timer := time.AfterFunc(wait+headerTimeout, expire)
	resp, err := h.httpClient().Do(req)
	if err != nil {
		timer.Stop()
		if timedOut.Load() {
			err = fmt.Errorf("no response headers within %s", wait+headerTimeout)
		}
		return fail(classify(ctx, err), err)
	}
	defer resp.Body.Close()
	timer.Stop()
	timer = time.AfterFunc(bodyTimeout, expire)
	defer timer.Stop()
	r := &Response{
		ETag:        resp.Header.Get("ETag"),
		WaitApplied: waitApplied(resp.Header.Get("Preference-Applied")),
	}
	if lm, err := http.ParseTime(resp.Header.Get("Last-Modified")); err == nil {
		r.LastModified = lm
	}
	switch resp.StatusCode {
	case http.StatusNotModified:
		r.NotModified = true
		return r, nil
	case http.StatusOK:
	default:
		return fail(ReasonStatus, fmt.Errorf("server answered %s", resp.Status))
	}
	if v := resp.Header.Values(HeaderDelta); v != nil {
		if err := checkDeltaHeader(v, held.Base); err != nil {
			return fail(ReasonProtocol, err)
		}
		r.Delta = true
	}
	if resp.ContentLength > maxBytes {
		return fail(ReasonTooLarge, fmt.Errorf("%w: %d bytes, more than the limit of %d", errTooLarge, resp.ContentLength, maxBytes))
	}
	data, err := h.readBody(resp, maxBytes)
	switch {
	case err != nil && timedOut.Load():
		return fail(ReasonTimeout, fmt.Errorf("the body did not end within %s", bodyTimeout))
	case errors.Is(err, errTooLarge):
		return fail(ReasonTooLarge, err)
	case err != nil:
		reason := classify(ctx, err)
		if reason == ReasonConnect {
			reason = ReasonBody
		}
		return fail(reason, fmt.Errorf("reading the body: %w", err))
	}
	r.Data = data
	return r, nil
}

// checkDeltaHeader checks the HeaderDelta values of a response to a
// request that sent base as HeaderBase: one "base=B", B a decimal number,
// and only when a base was sent.
func checkDeltaHeader(values []string, base string) error {
	if base == "" {
		return fmt.Errorf("server answered a delta CRL (%s) to a request for the complete CRL", HeaderDelta)
	}
	b, ok := strings.CutPrefix(strings.TrimSpace(strings.Join(values, ",")), "base=")
	if !ok || !isDecimal(b) {
		return fmt.Errorf("server answered %s: %q; want \"base=N\", N a CRL number", HeaderDelta, strings.Join(values, ", "))
	}
	return nil
}

// isDecimal reports whether s is a non-empty string of ASCII digits.
func isDecimal(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// tag returns the If-None-Match tag of held's copy, "" for none.
func (held Held) tag() string {
	switch {
	case held.Tag != "":
		return held.Tag
	case held.Data != nil:
		return Tag(held.Data)
	}
	return ""
}

// readBody reads a body of at most maxBytes. A body of known length is
// read into one array of that length, handed to the caller as it is, so a
// CRL costs its size once. A body of unknown length goes through the spare
// buffer: copied out when it ends within the limit, the buffer then given
// up lest a large CRL stay in memory twice; kept for the next fetch when
// the body is too large or breaks off, so that the retries against such a
// server read into the same chunks.
func (h *HTTP) readBody(resp *http.Response, maxBytes int64) ([]byte, error) {
	if resp.ContentLength >= 0 {
		data := make([]byte, resp.ContentLength)
		if _, err := io.ReadFull(resp.Body, data); err != nil {
			return nil, err
		}
		return data, nil
	}
	buf := h.takeBuffer()
	n, err := buf.fill(resp.Body, maxBytes+1)
	switch {
	case err != nil:
	case n > maxBytes:
		err = fmt.Errorf("%w: more than the limit of %d bytes", errTooLarge, maxBytes)
	default:
		return buf.bytes(n), nil
	}
	h.putBuffer(buf)
	return nil, err
}

// takeBuffer returns the spare body buffer, or a new one while another
// fetch holds it.
func (h *HTTP) takeBuffer() *bodyBuffer {
	h.spareMu.Lock()
	defer h.spareMu.Unlock()
	b := h.spare
	h.spare = nil
	if b == nil {
		b = new(bodyBuffer)
	}
	return b
}

// putBuffer keeps b for the next fetch.
func (h *HTTP) putBuffer(b *bodyBuffer) {
	h.spareMu.Lock()
	defer h.spareMu.Unlock()
	if h.spare == nil {
		h.spare = b
	}
}

// Sizes of the chunks of a bodyBuffer: the first is small for the usual
// CRL, each next one twice the last, up to maxChunk.
const (
	firstChunk = 32 << 10
	maxChunk   = 1 << 20
)

// bodyBuffer holds a body of unknown length in chunks that are filled in
// place. Nothing read is ever copied to a larger array, as io.ReadAll's
// growth does, so a body costs at most its limit once (and once more for
// the copy handed out); and a server that answers too much at every retry
// is read into the same chunks again, kept since the last failure, instead
// of into new ones that pile up until the garbage collector runs. The
// buffer is as large as the largest body read, at most MaxBytes plus one
// byte.
type bodyBuffer struct {
	chunks [][]byte
}

// fill reads r into b until its end or until limit bytes are in, and
// returns how many it read.
func (b *bodyBuffer) fill(r io.Reader, limit int64) (int64, error) {
	var n int64
	for i := 0; n < limit; i++ {
		if i == len(b.chunks) {
			size := min(int64(firstChunk)<<min(i, 5), maxChunk, limit-n)
			b.chunks = append(b.chunks, make([]byte, size))
		}
		c := b.chunks[i]
		c = c[:min(int64(len(c)), limit-n)]
		for len(c) > 0 {
			k, err := r.Read(c)
			c, n = c[k:], n+int64(k)
			if err == io.EOF {
				return n, nil
			}
			if err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// bytes returns a copy of the first n bytes of b, the caller's to keep.
func (b *bodyBuffer) bytes(n int64) []byte {
	out := make([]byte, 0, n)
	for _, c := range b.chunks {
		k := min(int64(len(c)), n-int64(len(out)))
		if k == 0 {
			break
		}
		out = append(out, c[:k]...)
	}
	return out
}

// waitApplied reads Preference-Applied: a wait of 0 (a server with too
// many long polls waiting) is no long poll, lest the next request go out
// at once.
func waitApplied(v string) bool {
	v = strings.TrimSpace(v)
	return v != "" && !strings.EqualFold(v, "wait=0")
}

// classify gives the Reason of a transport error; ctx is the request's,
// cancelled by its timers.
func classify(ctx context.Context, err error) string {
	var cve *tls.CertificateVerificationError
	var rhe tls.RecordHeaderError
	var ae tls.AlertError
	var ne net.Error
	var oe *net.OpError
	switch {
	case errors.As(err, &cve), errors.As(err, &rhe), errors.As(err, &ae), strings.Contains(err.Error(), "tls: "),
		strings.Contains(err.Error(), "HTTP response to HTTPS client"):
		return ReasonTLS
	case ctx.Err() != nil, errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return ReasonTimeout
	case errors.As(err, &oe) && oe.Op == "dial":
		return ReasonConnect
	case errors.Is(err, io.ErrUnexpectedEOF):
		return ReasonBody
	}
	return ReasonConnect
}

package validate

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"
)

// The ACME error types (RFC 8555 section 6.7, without the
// "urn:ietf:params:acme:error:" prefix) an Error may have.
const (
	// TypeConnection: no usable connection or HTTP exchange: connect
	// failed or timed out, the total time ran out, a redirect broke the
	// rules of the package doc.
	TypeConnection = "connection"
	// TypeDNS: a name did not resolve, or the TXT lookup of dns-01 failed
	// (including no such name and no TXT record).
	TypeDNS = "dns"
	// TypeTLS: the TLS handshake of tls-alpn-01 failed.
	TypeTLS = "tls"
	// TypeUnauthorized: the server answered without the challenge: an
	// HTTP status other than 200, or no acme-tls/1 protocol.
	TypeUnauthorized = "unauthorized"
	// TypeIncorrectResponse: the server answered with something other
	// than the challenge's answer: body, certificate or TXT values.
	TypeIncorrectResponse = "incorrectResponse"
	// TypeRejectedIdentifier: an address in a refused range (see
	// DefaultRefused), or an identifier the challenge cannot validate.
	TypeRejectedIdentifier = "rejectedIdentifier"
	// TypeMalformed: an http-01 token that is not base64url.
	TypeMalformed = "malformed"
)

// Error is a failed validation: Type is the ACME error type the server
// reports (one of the Type constants), Detail says for a person what was
// asked of whom, and what was expected and got. Err is the cause, when
// there is one.
type Error struct {
	Type, Detail string
	Err          error
}

func (e *Error) Error() string { return e.Type + ": " + e.Detail }

// Unwrap returns the cause, so that errors.Is sees context.Canceled.
func (e *Error) Unwrap() error { return e.Err }

// errTotal is the cause of a validation's context when Config.Total ran out.
var errTotal = errors.New("total time of a validation spent")

// failure turns err, met while doing what, into an *Error: of type typ
// unless err says better (a refused address, a DNS failure, the limits).
func (v *Validator) failure(ctx context.Context, typ, what string, err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		what, err = "fetching "+ue.URL, ue.Err
	}
	var refused *refusedError
	if errors.As(err, &refused) {
		return &Error{TypeRejectedIdentifier, what + ": " + refused.Error(), err}
	}
	if expired(ctx) {
		if context.Cause(ctx) == errTotal {
			return &Error{typ, fmt.Sprintf("%s: no answer within the validation's time limit of %v", what, v.cfg.Total), err}
		}
		return &Error{typ, what + ": " + ctx.Err().Error(), err}
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return &Error{TypeDNS, dnsDetail(what, dnsErr), err}
	}
	return &Error{typ, what + ": " + err.Error(), err}
}

// expired reports whether ctx is done. Once its deadline has passed, it
// waits for ctx to be done: a read deadline taken from ctx (Go's resolver
// sets one) can fire before ctx's own timer, and the cause is known only
// after that timer.
func expired(ctx context.Context) bool {
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		<-ctx.Done()
	}
	return ctx.Err() != nil
}

func dnsDetail(what string, e *net.DNSError) string {
	switch {
	case e.IsNotFound:
		return fmt.Sprintf("%s: %s: no such name, or no record of the type asked", what, e.Name)
	case e.IsTimeout:
		return fmt.Sprintf("%s: %s: the DNS server did not answer in time", what, e.Name)
	}
	return fmt.Sprintf("%s: %s: %s", what, e.Name, e.Err)
}

package acme

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// ProblemType is the media type of every error answer (RFC 7807).
const ProblemType = "application/problem+json"

// errNS prefixes the ACME error types (RFC 8555 section 6.7).
const errNS = "urn:ietf:params:acme:error:"

// ACME error types this server answers with; each problem's type is
// errNS and one of them.
const (
	ErrMalformed               = "malformed"
	ErrBadNonce                = "badNonce"
	ErrUnauthorized            = "unauthorized"
	ErrAccountDoesNotExist     = "accountDoesNotExist"
	ErrExternalAccountRequired = "externalAccountRequired"
	ErrBadSignatureAlgorithm   = "badSignatureAlgorithm"
	ErrBadPublicKey            = "badPublicKey"
	ErrRejectedIdentifier      = "rejectedIdentifier"
	ErrRateLimited             = "rateLimited"
	ErrBadCSR                  = "badCSR"
	ErrOrderNotReady           = "orderNotReady"
	ErrAlreadyRevoked          = "alreadyRevoked"
	ErrAlreadyReplaced         = "alreadyReplaced"
	ErrBadRevocationReason     = "badRevocationReason"
	ErrUnsupportedContact      = "unsupportedContact"
	ErrInvalidContact          = "invalidContact"
	ErrUnsupportedIdentifier   = "unsupportedIdentifier"
	ErrServerInternal          = "serverInternal"
)

// problem is an error answer: an RFC 7807 problem document with an ACME
// error type. It is also the error that handlers return.
type problem struct {
	Type        string        `json:"type"`
	Detail      string        `json:"detail"`
	Status      int           `json:"status"`
	Identifier  *Identifier   `json:"identifier,omitempty"`
	Subproblems []*problem    `json:"subproblems,omitempty"`
	Algorithms  []string      `json:"algorithms,omitempty"` // badSignatureAlgorithm
	retryAfter  time.Duration // a Retry-After header, when set
}

func (p *problem) Error() string { return p.Type + ": " + p.Detail }

// short is the problem's type without the namespace, for logs and metrics.
func (p *problem) short() string { return p.Type[len(errNS):] }

// prob makes a problem of ACME error type typ with an HTTP status.
func prob(status int, typ, format string, args ...any) *problem {
	return &problem{Type: errNS + typ, Detail: fmt.Sprintf(format, args...), Status: status}
}

func malformed(format string, args ...any) *problem {
	return prob(http.StatusBadRequest, ErrMalformed, format, args...)
}

func unauthorized(format string, args ...any) *problem {
	return prob(http.StatusForbidden, ErrUnauthorized, format, args...)
}

func notFound(what string) *problem {
	return prob(http.StatusNotFound, ErrMalformed, "no such %s", what)
}

// writeProblem answers p.
func writeProblem(w http.ResponseWriter, p *problem) {
	body, _ := json.Marshal(p)
	h := w.Header()
	h.Set("Content-Type", ProblemType)
	if p.retryAfter > 0 {
		h.Set("Retry-After", strconvSeconds(p.retryAfter))
	}
	w.WriteHeader(p.Status)
	w.Write(append(body, '\n'))
}

// strconvSeconds is a Retry-After of d: whole seconds, at least one.
func strconvSeconds(d time.Duration) string {
	return strconv.Itoa(int(max(d, time.Second).Round(time.Second) / time.Second))
}

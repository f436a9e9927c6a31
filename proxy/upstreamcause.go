package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"syscall"
	"time"
)

// The causes of an upstream failure, logged as the reason of a request
// answered 502 or 504 (not counted as refusals: the client is not at
// fault) and named by the page of RefusalPage mode.
const (
	ReasonUpstreamRefused = "upstream-refused" // nothing listens at the upstream's address
	ReasonUpstreamTLS     = "upstream-tls"     // the TLS handshake with an https upstream failed
	ReasonUpstreamTimeout = "upstream-timeout" // connecting or the response headers took too long
	ReasonUpstreamDNS     = "upstream-dns"     // the upstream's host name did not resolve
	ReasonUpstreamError   = "upstream-error"   // any other failure (a reset, a malformed answer)
)

// UpstreamCause classifies err, an error of forwarding to (or dialing) the
// upstream, as one of the ReasonUpstream constants. A timeout wins over
// the rest, as it decides the status (504).
func UpstreamCause(err error) string {
	var ne net.Error
	var dns *net.DNSError
	var rh tls.RecordHeaderError
	var alert tls.AlertError
	var verr *tls.CertificateVerificationError
	var unknown x509.UnknownAuthorityError
	var hostname x509.HostnameError
	switch {
	case errors.As(err, &dns) && !dns.IsTimeout:
		return ReasonUpstreamDNS
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, context.DeadlineExceeded):
		return ReasonUpstreamTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return ReasonUpstreamRefused
	case errors.As(err, &rh), errors.As(err, &alert), errors.As(err, &verr),
		errors.As(err, &unknown), errors.As(err, &hostname):
		return ReasonUpstreamTLS
	}
	return ReasonUpstreamError
}

// upstreamStatus is the status of an answer to a request whose upstream
// failed for cause: 504 for a timeout, else 502.
func upstreamStatus(cause string) int {
	if cause == ReasonUpstreamTimeout {
		return http.StatusGatewayTimeout
	}
	return http.StatusBadGateway
}

// upstreamPage is the page of RefusalPage mode for a request whose
// upstream failed for cause at now: the proxy's side (Service), with the
// cause in words and no certificate, the client's being fine.
func upstreamPage(cause string, now time.Time) *refusalPage {
	pg := &refusalPage{Status: upstreamStatus(cause), Reason: cause, Time: pageTime(now), Service: true,
		Title: "The application behind this site is not answering",
		Advice: "Your certificate was accepted: nothing is wrong on your side. Try again in a few minutes; " +
			"if this lasts, tell the site's administrator, quoting the reason code below."}
	switch cause {
	case ReasonUpstreamRefused:
		pg.Message = "The application refused the connection: it is not running, or not listening where this site forwards to."
	case ReasonUpstreamTLS:
		pg.Message = "The secure (TLS) connection to the application failed: it does not speak TLS (an http:// application forwarded to as https://), or its certificate is not trusted."
	case ReasonUpstreamTimeout:
		pg.Title = "The application behind this site is too slow"
		pg.Message = "The application did not answer in time."
	case ReasonUpstreamDNS:
		pg.Message = "The application's host name could not be resolved (DNS)."
	default:
		pg.Message = "The connection to the application failed before it answered."
	}
	return pg
}

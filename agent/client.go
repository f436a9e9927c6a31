package agent

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"minica/formats"
)

// The wire format of serve's renewal endpoint (docs/serve.md).
const (
	// RenewPath is appended to Config.URL.
	RenewPath = "/renew"
	// BootstrapPath is appended to Config.URL for the first certificate,
	// traded for Config.TokenFile's token.
	BootstrapPath = "/bootstrap"
	// CSRType is the request's body: one DER certificate request.
	CSRType = "application/pkcs10"
	// ChainType is a successful answer: PEM, the new certificate first,
	// then its chain.
	ChainType = "application/pem-certificate-chain"
	// ProblemType is a refusal: a JSON object with status, reason and
	// detail (RFC 9457 problem details, with reason as an extension).
	ProblemType = "application/problem+json"
	// maxAnswer bounds the answer read: a certificate and a short chain
	// are a few KiB.
	maxAnswer = 1 << 20
)

// Refusal is serve's answer when it does not renew (or, to a bootstrap
// token, issue): the HTTP status, the machine-readable reason and serve's
// sentence about it.
type Refusal struct {
	Status     int
	Reason     string
	Detail     string
	RetryAfter time.Duration // from a 429 or 503 answer, else 0
	// Bootstrap is set for a refusal of the first certificate.
	Bootstrap bool
}

func (r *Refusal) Error() string {
	what := "the renewal"
	if r.Bootstrap {
		what = "the bootstrap token"
	}
	s := fmt.Sprintf("serve refused %s: %d %s", what, r.Status, r.Reason)
	if r.Detail != "" {
		s += ": " + r.Detail
	}
	return s
}

// Permanent reports whether retrying cannot help: every 4xx answer but 408
// (timeout) and 429 (rate limit). 5xx answers and network errors are
// retried.
func (r *Refusal) Permanent() bool {
	return r.Status >= 400 && r.Status < 500 && r.Status != http.StatusRequestTimeout && r.Status != http.StatusTooManyRequests
}

// Reasons a Refusal may carry that the agent treats specially.
const (
	ReasonRevoked = "revoked"
	ReasonExpired = "expired"
)

// newCSR returns the DER CSR for key with cert's subject and SANs.
func newCSR(cert *x509.Certificate, key crypto.Signer) ([]byte, error) {
	tmpl := &x509.CertificateRequest{
		RawSubject:     cert.RawSubject,
		DNSNames:       cert.DNSNames,
		IPAddresses:    cert.IPAddresses,
		EmailAddresses: cert.EmailAddresses,
		URIs:           cert.URIs,
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		return nil, fmt.Errorf("creating the certificate request: %w", err)
	}
	return der, nil
}

// post sends csr to the renewal endpoint, authenticated by cur, and
// returns the new certificate and its chain, checked (see checkAnswer).
func (a *Agent) post(ctx context.Context, cur *current, key crypto.Signer, csr []byte) (*x509.Certificate, []*x509.Certificate, error) {
	leaf, chain, err := a.exchange(ctx, a.httpClient(cur), a.url, csr, "")
	if err != nil {
		return nil, nil, err
	}
	if err := a.checkAnswer(cur.cert, key, leaf, chain); err != nil {
		return nil, nil, fmt.Errorf("the certificate %s sent: %w", a.url, err)
	}
	return leaf, chain, nil
}

// exchange posts csr to url with client (and token as a bearer token, when
// set) and returns the certificate and chain of the answer, or a
// *Refusal.
func (a *Agent) exchange(ctx context.Context, client *http.Client, url string, csr []byte, token string) (*x509.Certificate, []*x509.Certificate, error) {
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(csr))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", CSRType)
	req.Header.Set("Accept", ChainType+", "+ProblemType)
	req.Header.Set("User-Agent", "minica-agent")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("posting to %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return nil, nil, fmt.Errorf("reading the answer of %s: %w", url, err)
	}
	if len(body) > maxAnswer {
		return nil, nil, fmt.Errorf("the answer of %s is larger than %d bytes", url, maxAnswer)
	}
	if resp.StatusCode != http.StatusOK {
		ref := refusalOf(resp, body)
		ref.Bootstrap = token != ""
		return nil, nil, ref
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != ChainType {
		return nil, nil, fmt.Errorf("the answer of %s is %q, not %s", url, resp.Header.Get("Content-Type"), ChainType)
	}
	certs, err := formats.ParseCertificates(body)
	if err != nil || len(certs) == 0 {
		return nil, nil, fmt.Errorf("the answer of %s holds no certificate: %v", url, err)
	}
	return certs[0], certs[1:], nil
}

// refusalOf reads a refusal; an answer that is not problem details (a
// proxy in front, a server without renewal) keeps its status and text.
func refusalOf(resp *http.Response, body []byte) *Refusal {
	r := &Refusal{Status: resp.StatusCode}
	var p struct {
		Reason string `json:"reason"`
		Detail string `json:"detail"`
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == ProblemType && json.Unmarshal(body, &p) == nil {
		r.Reason, r.Detail = p.Reason, p.Detail
	} else {
		r.Reason = http.StatusText(resp.StatusCode)
		r.Detail = printable(string(bytes.TrimSpace(body[:min(len(body), 200)])))
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		r.RetryAfter = time.Duration(s) * time.Second
	}
	return r
}

// printable keeps the printable ASCII of s, for a log line.
func printable(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c < ' ' || c > '~' {
			b[i] = '?'
		}
	}
	return string(b)
}

// checkAnswer checks that leaf certifies key with old's identity and chains
// to the trusted CAs: the agent never installs a certificate that does not
// replace the old one.
func (a *Agent) checkAnswer(old *x509.Certificate, key crypto.Signer, leaf *x509.Certificate, chain []*x509.Certificate) error {
	if err := formats.KeyMatchesCertificate(key, leaf); err != nil {
		return fmt.Errorf("it is not for the new key: %w", err)
	}
	switch {
	case !bytes.Equal(leaf.RawSubject, old.RawSubject):
		return fmt.Errorf("its subject %q is not the old one's %q", leaf.Subject, old.Subject)
	case !slices.Equal(leaf.DNSNames, old.DNSNames) || !slices.Equal(leaf.EmailAddresses, old.EmailAddresses) ||
		!slices.EqualFunc(leaf.IPAddresses, old.IPAddresses, func(x, y net.IP) bool { return x.Equal(y) }) ||
		!slices.EqualFunc(leaf.URIs, old.URIs, func(x, y *url.URL) bool { return x.String() == y.String() }):
		return errors.New("its subject alternative names are not the old one's")
	case !bytes.Equal(leaf.RawIssuer, old.RawIssuer):
		return fmt.Errorf("its issuer %q is not the old one's %q", leaf.Issuer, old.Issuer)
	}
	return a.verifyChain(leaf, chain)
}

// verifyChain checks that leaf chains to the trusted CAs (--ca) through
// chain.
func (a *Agent) verifyChain(leaf *x509.Certificate, chain []*x509.Certificate) error {
	inter := x509.NewCertPool()
	for _, c := range chain {
		inter.AddCert(c)
	}
	_, err := leaf.Verify(x509.VerifyOptions{Roots: a.cfg.Roots, Intermediates: inter,
		CurrentTime: a.now(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	if err != nil {
		return fmt.Errorf("it does not verify against --ca: %w", err)
	}
	return nil
}

// httpClient is a client for one request, which presents cur (none when
// cur is nil: the first certificate's request): a new one each time, so
// that no connection stays open between renewals.
func (a *Agent) httpClient(cur *current) *http.Client {
	tc := &tls.Config{RootCAs: a.cfg.Roots, MinVersion: tls.VersionTLS12, Time: a.now}
	if cur != nil {
		tlsCert := tls.Certificate{Certificate: [][]byte{cur.cert.Raw}, PrivateKey: cur.key, Leaf: cur.cert}
		for _, c := range cur.chain {
			tlsCert.Certificate = append(tlsCert.Certificate, c.Raw)
		}
		// Always present the certificate, even one serve's list of
		// acceptable CAs leaves out: serve then says why it refuses.
		tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &tlsCert, nil }
	}
	tr := &http.Transport{
		TLSClientConfig:        tc,
		Proxy:                  http.ProxyFromEnvironment,
		DisableKeepAlives:      true,
		TLSHandshakeTimeout:    a.cfg.Timeout,
		ResponseHeaderTimeout:  a.cfg.Timeout,
		MaxResponseHeaderBytes: 64 << 10,
		ForceAttemptHTTP2:      false,
	}
	return &http.Client{Transport: tr, Timeout: a.cfg.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

package agent

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"go.step.sm/crypto/keyutil"

	"minica/formats"
)

// maxTokenFile bounds what is read of Config.TokenFile: a token is 43
// characters.
const maxTokenFile = 1 << 10

// bootstrapIfNeeded gets the first certificate with the token of
// Config.TokenFile while CertFile does not exist. A certificate already
// there wins and the token is not read (it is spent by then). Failures
// are retried as a renewal's are (Backoff; with Once, Attempts times),
// with the same key each time (see bootstrapKey); a refusal no retry can change (a
// token unknown, used, cancelled or expired) ends Run with the *Refusal.
// It reports whether it got the first certificate (with Once, Run ends
// there).
func (a *Agent) bootstrapIfNeeded(ctx context.Context) (bool, error) {
	if a.cfg.TokenFile == "" {
		return false, nil
	}
	if _, err := os.Stat(a.cfg.CertFile); err == nil {
		a.log.event("bootstrap-skipped", "cert", a.cfg.CertFile, "reason", "the certificate exists: the token is not used")
		return false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("reading certificate %q: %w", a.cfg.CertFile, err)
	}
	token, err := readToken(a.cfg.TokenFile)
	if err != nil {
		return false, err
	}
	key, err := a.bootstrapKey()
	if err != nil {
		return false, err
	}
	for attempt := 1; ; attempt++ {
		leaf, err := a.bootstrap(ctx, token, key)
		if err == nil {
			a.log.event("bootstrapped", "serial", serialHex(leaf), "days_left", days(leaf, a.now()), "left", left(leaf, a.now()),
				"not_after", rfc3339(leaf.NotAfter), "renew_at", rfc3339(DueAt(leaf, a.cfg.RenewAt)))
			if execErr := a.exec(ctx, leaf); execErr != nil && a.cfg.Once {
				return true, &ExecError{Err: execErr}
			}
			return true, nil
		}
		if ctx.Err() != nil {
			return false, nil
		}
		var ref *Refusal
		if errors.As(err, &ref) && ref.Permanent() {
			os.Remove(a.cfg.KeyFile + pendingSuffix) // no certificate will come for it
			a.log.event("bootstrap-refused", "status", strconv.Itoa(ref.Status), "reason", ref.Reason, "detail", ref.Detail)
			return false, ref
		}
		var fileErr *fileError
		if errors.As(err, &fileErr) {
			return false, fileErr.err
		}
		if a.cfg.Once && attempt >= a.cfg.Attempts {
			a.log.event("bootstrap-failed", "attempt", strconv.Itoa(attempt), "error", err.Error())
			return false, fmt.Errorf("getting the first certificate after %d attempts: %w", attempt, err)
		}
		wait := Backoff(attempt, a.cfg.RetryMin, a.cfg.RetryMax, 4*a.cfg.RetryMax, a.cfg.Jitter())
		if ref != nil && ref.RetryAfter > wait {
			wait = min(ref.RetryAfter, a.cfg.RetryMax)
		}
		a.log.event("bootstrap-failed", "attempt", strconv.Itoa(attempt), "error", err.Error(), "retry_in", wait.Round(time.Millisecond).String())
		a.sleep(ctx, wait)
	}
}

// bootstrapKey returns the key of the first certificate: the pending key
// a run stopped before its answer left (serve answers a used token again
// for the key it was used for), else a new ECDSA P-256 key.
func (a *Agent) bootstrapKey() (crypto.Signer, error) {
	if data, err := os.ReadFile(a.cfg.KeyFile + pendingSuffix); err == nil {
		if key, err := formats.ParsePrivateKeyPEM(data, nil); err == nil {
			a.log.event("bootstrap-key-reused", "key", a.cfg.KeyFile+pendingSuffix)
			return key, nil
		}
	}
	key, err := keyutil.GenerateSigner("EC", "P-256", 0)
	if err != nil {
		return nil, fmt.Errorf("generating the key: %w", err)
	}
	return key, nil
}

// bootstrap trades token and a CSR for key at serve's BootstrapPath and
// installs the answer: the key is written first as KEY.next, then the
// certificate (and the chain file), then the key moved into place, as a
// renewal does, so that a stop at any point leaves a state the next start
// completes (see recoverPending). The certificate must certify key and
// chain to the trusted CAs; its names are the token's.
func (a *Agent) bootstrap(ctx context.Context, token string, key crypto.Signer) (*x509.Certificate, error) {
	csr, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		return nil, &fileError{fmt.Errorf("creating the certificate request: %w", err)}
	}
	if err := a.writePending(key); err != nil {
		return nil, &fileError{err}
	}
	leaf, chain, err := a.exchange(ctx, a.httpClient(nil), a.bootstrapURL, csr, token)
	if err == nil {
		if err = formats.KeyMatchesCertificate(key, leaf); err != nil {
			err = fmt.Errorf("the certificate %s sent is not for the new key: %w", a.bootstrapURL, err)
		} else if err = a.verifyChain(leaf, chain); err != nil {
			err = fmt.Errorf("the certificate %s sent: %w", a.bootstrapURL, err)
		}
	}
	if err != nil {
		return nil, err // KEY.next stays for the next try
	}
	if err := a.install(&current{}, leaf, chain); err != nil {
		return nil, &fileError{fmt.Errorf("installing the first certificate (serial %s): %w", serialHex(leaf), err)}
	}
	return leaf, nil
}

// readToken reads a bootstrap token from file: one word of printable
// ASCII, surrounding white space ignored.
func readToken(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", fmt.Errorf("reading the token file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	switch {
	case err != nil:
		return "", fmt.Errorf("reading the token file %q: %w", file, err)
	case len(data) > maxTokenFile:
		return "", fmt.Errorf("the token file %q is larger than %d bytes: want the token `minica token` printed", file, maxTokenFile)
	}
	token := string(bytes.TrimSpace(data))
	if token == "" || strings.ContainsFunc(token, func(r rune) bool { return r <= ' ' || r > '~' }) {
		return "", fmt.Errorf("the token file %q does not hold one token: want the one word `minica token` printed", file)
	}
	return token, nil
}

package revoke

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"time"
)

// MaxClockSkew is how far in the future a new CRL's thisUpdate may be (see
// MayReplace), for the clocks of a CA and a relying party that disagree by
// a little.
const MaxClockSkew = time.Minute

// ParseCRLFile parses data, the content of a CRL file, against the CA
// bundle cas, and returns its CRLs in file order, each with the CA of cas
// that signed it (the first that verifies it). data is one DER CRL, or PEM:
// one "X509 CRL" block, or several, the CRLs of the CAs of a hierarchy, as
// nginx, Apache and HAProxy read them. Text around the PEM blocks is
// ignored (RFC 7468 section 2), a block of another type is malformed, and
// a CA has at most one complete CRL in a file. Each CRL is verified by
// ParseCRL.
//
// A CA's complete CRL may be followed or preceded by one delta CRL of the
// same CA (RFC 5280 section 5.2.4), as `openssl verify -use_deltas
// -extended_crl` reads a file: the CRL returned for that CA is then the
// complete one with the delta applied (WithDelta). A delta that does not
// apply to it (against a later base, or not newer) is left out, as OpenSSL
// leaves it out; a delta without its CA's complete CRL is refused
// (ErrIncomplete). Without -extended_crl, `openssl verify` (OpenSSL 3.0,
// -use_deltas or not) takes a newer delta for the complete CRL and passes
// what only the complete CRL lists: such a file is not for a server that
// reads its CRLs through OpenSSL with the default flags.
//
// It is the one reader of a CRL file: the proxy and `minica verify` read
// every CRL file through it, so that they never disagree about one. A CRL
// no CA of cas verifies gives an error wrapping ErrUnverified and the
// refusal of each CA (and reads as that refusal alone against one CA); two
// complete CRLs, or two delta CRLs, of one CA, one wrapping ErrTwoCRLs.
func ParseCRLFile(data []byte, cas []*x509.Certificate) ([]IssuedCRL, error) {
	parts, err := splitCRLFile(data)
	if err != nil {
		return nil, err
	}
	type issued struct {
		crl    *CRL
		issuer *x509.Certificate
	}
	var completes, deltas []issued
	for i, part := range parts {
		crl, ca, err := verifyByOne(part, cas)
		if err != nil {
			if len(parts) > 1 {
				err = fmt.Errorf("CRL %d of %d: %w", i+1, len(parts), err)
			}
			return nil, err
		}
		list := &completes
		if crl.deltaBase != nil {
			list = &deltas
		}
		if slices.ContainsFunc(*list, func(o issued) bool { return o.issuer.Equal(ca) }) {
			return nil, fmt.Errorf("%w (%q)", ErrTwoCRLs, ca.Subject.String())
		}
		*list = append(*list, issued{crl, ca})
	}
	for _, d := range deltas {
		i := slices.IndexFunc(completes, func(o issued) bool { return o.issuer.Equal(d.issuer) })
		if i < 0 {
			return nil, fmt.Errorf("%w: a delta CRL (number %s, base %s) of %q without the complete CRL of its CA",
				ErrIncomplete, d.crl.number, d.crl.deltaBase, d.issuer.Subject.String())
		}
		if combined, err := completes[i].crl.WithDelta(d.crl); err == nil {
			completes[i].crl = combined
		}
	}
	out := make([]IssuedCRL, len(completes))
	for i, c := range completes {
		out[i] = IssuedCRL{CRL: c.crl, Issuer: c.issuer}
	}
	return out, nil
}

// verifyByOne returns the CRL of data, complete or delta, with the first
// CA of cas that verifies it.
func verifyByOne(data []byte, cas []*x509.Certificate) (*CRL, *x509.Certificate, error) {
	var errs []error
	for _, ca := range cas {
		crl, err := parseAny(data, ca)
		if err == nil {
			return crl, ca, nil
		}
		errs = append(errs, err)
	}
	return nil, nil, &unverifiedError{errs: errs}
}

// unverifiedError is ErrUnverified with the refusal of each CA. Against a
// bundle of one CA it reads as that CA's refusal alone.
type unverifiedError struct{ errs []error }

func (e *unverifiedError) Error() string {
	if len(e.errs) == 1 {
		return e.errs[0].Error()
	}
	return ErrUnverified.Error() + ": " + errors.Join(e.errs...).Error()
}

func (e *unverifiedError) Unwrap() []error { return append([]error{ErrUnverified}, e.errs...) }

// splitCRLFile returns the CRLs of a CRL file (see ParseCRLFile): the DER
// of each "X509 CRL" block, or data itself when it holds no PEM block (one
// DER CRL, or bytes that the parser then refuses).
func splitCRLFile(data []byte) ([][]byte, error) {
	if block, _ := pem.Decode(data); block == nil {
		return [][]byte{data}, nil
	}
	var out [][]byte
	for rest := data; ; {
		block, r := pem.Decode(rest)
		if block == nil {
			return out, nil
		}
		if block.Type != "X509 CRL" {
			return nil, malformed("PEM block %d is %q, not \"X509 CRL\"", len(out)+1, block.Type)
		}
		out = append(out, block.Bytes)
		rest = r
	}
}

// MayReplace is the one rule for a CRL after another: whether next may
// replace held, the CRL in use of the same CA (held.CRL nil for none), at
// now. The proxy asks it at every reload, `minica crl fetch` before it
// writes, serve for a CRL another process published. Both must have been
// verified against their Issuer (by ParseCRLFile or ParseCRL).
//
// It returns true to replace held, false and a nil error to keep it (the
// same number: the same CRL, as far as its CA is concerned), and an error
// for a CRL that must be refused:
//
//   - one whose thisUpdate is more than MaxClockSkew after now, held or
//     not: ErrNotYetValid;
//   - one of another CA than held's: ErrWrongIssuer;
//   - one with a lower number than held's, a replay: ErrLowerNumber;
//   - one past its nextUpdate while held is not: ErrExpired. An expired
//     CRL never replaces a current one, whatever its number, lest it hold
//     back the current CRLs that follow it (their numbers are lower) until
//     the CA signs again. Over an expired CRL, or none, a higher number
//     is taken: its revocations are newer, and freshness is judged apart.
func MayReplace(next, held IssuedCRL, now time.Time) (bool, error) {
	if next.CRL.ThisUpdate().After(now.Add(MaxClockSkew)) {
		return false, fmt.Errorf("%w: this update %s is after %s", ErrNotYetValid, rfc3339(next.CRL.ThisUpdate()), rfc3339(now))
	}
	if held.CRL == nil {
		return true, nil
	}
	if !bytes.Equal(next.Issuer.Raw, held.Issuer.Raw) {
		return false, fmt.Errorf("%w: a CRL of %q cannot replace the CRL of %q", ErrWrongIssuer, next.Issuer.Subject.String(), held.Issuer.Subject.String())
	}
	switch next.CRL.Number().Cmp(held.CRL.Number()) {
	case -1:
		return false, fmt.Errorf("%w: number %s is lower than %s, the number of the CRL held", ErrLowerNumber, next.CRL.Number(), held.CRL.Number())
	case 0:
		return false, nil
	}
	if expired(next.CRL, now) && !expired(held.CRL, now) {
		return false, fmt.Errorf("%w: next update %s is past, and the CRL held (number %s) is current until %s",
			ErrExpired, rfc3339(next.CRL.NextUpdate()), held.CRL.Number(), rfc3339(held.CRL.NextUpdate()))
	}
	return true, nil
}

// expired reports whether crl is past its nextUpdate at now, by Freshness
// without a grace period.
func expired(crl Revocations, now time.Time) bool {
	return Freshness(crl.ThisUpdate(), crl.NextUpdate(), Thresholds{}, now) == Expired
}

package revoke

import (
	"crypto/x509"
	"errors"
	"fmt"
	"math/big"
	"slices"
)

// IssuedCRL is a CRL whose signature verified against Issuer, one of the
// CRLs JudgePath chooses from.
type IssuedCRL struct {
	CRL    Revocations
	Issuer *x509.Certificate
}

// JudgePath is the judge of a certificate over a whole certification path:
// path is a chain that crypto/x509 verified from f.Cert (path[0]) to a
// trust anchor (the last element), as Certificate.Verify returns it, and
// crls are the CRLs at hand, each already verified against its issuer.
//
// It gives f.Cert to [Judge] with the CRL of path[1] (or, if crls lack it,
// the first of crls, which Judge then refuses as ReasonNoCRLForIssuer;
// f.Issuer, f.CRL and f.CRLIssuer are set from path, and the CAs of the
// path, verified, join f.CAs), then checks each CA below the anchor against the CRL of the CA
// above it, in order from the leaf up: that CRL must be there and usable at
// f.At (ReasonCRLMissing, ReasonCRLExpired, ReasonCRLNotYetValid, as in
// Judge's step 1) and must not list the CA (ReasonRevoked). So a revoked
// intermediate refuses every certificate under it, and no CA of the path
// goes unchecked. The anchor itself is trusted, never judged by a CRL. With
// f.SkipRevocation only Judge's checks of f.Cert are made.
//
// A path of one certificate (a self-signed leaf) is judged by Judge with no
// issuer.
func JudgePath(f Facts, path []*x509.Certificate, crls []IssuedCRL) error {
	if len(path) == 0 || f.Cert == nil || !f.Cert.Equal(path[0]) {
		return errors.New("judging certificate: the path must start with the certificate judged")
	}
	f.CAs = append(slices.Clone(f.CAs), path[1:]...)
	// Without a CRL of the issuer, Judge is given another CRL at hand, so
	// that it names the gap (ReasonNoCRLForIssuer) after the checks of the
	// certificate itself; with none at all, ReasonCRLMissing.
	f.CRL, f.CRLIssuer = nil, nil
	if len(crls) > 0 {
		f.CRL, f.CRLIssuer = crls[0].CRL, crls[0].Issuer
	}
	if len(path) == 1 {
		f.Issuer = nil
		return Judge(f)
	}
	f.Issuer = path[1]
	if c := CRLOf(crls, path[1]); c.CRL != nil {
		f.CRL, f.CRLIssuer = c.CRL, c.Issuer
	}
	if err := Judge(f); err != nil || f.SkipRevocation {
		return err
	}
	for i := 1; i < len(path)-1; i++ {
		if err := judgeCA(f, path[i], path[i+1], crls); err != nil {
			return err
		}
	}
	return nil
}

// JudgeChains is JudgePath over the chains crypto/x509's Certificate.Verify
// returned for f.Cert: it returns the first chain the judge accepts, else
// the refusal of the first chain through an issuer whose CRL is in crls (of
// the first chain if there is none), so that a certificate with a path
// through a CA that vouches for it is never refused for another path.
func JudgeChains(f Facts, chains [][]*x509.Certificate, crls []IssuedCRL) ([]*x509.Certificate, error) {
	if len(chains) == 0 {
		return nil, errors.New("judging certificate: no verified chain")
	}
	var refused error
	throughCRLIssuer := false
	for _, chain := range chains {
		err := JudgePath(f, chain, crls)
		if err == nil {
			return chain, nil
		}
		hasCRL := len(chain) > 1 && CRLOf(crls, chain[1]).CRL != nil
		if refused == nil || hasCRL && !throughCRLIssuer {
			refused, throughCRLIssuer = err, hasCRL
		}
	}
	return nil, refused
}

// judgeCA checks ca, a CA of a verified path below the anchor, against the
// CRL of parent, the CA above it.
func judgeCA(f Facts, ca, parent *x509.Certificate, crls []IssuedCRL) error {
	held := CRLOf(crls, parent)
	crl, issuer := held.CRL, held.Issuer
	g := Facts{CAs: []*x509.Certificate{parent}, CRL: crl, CRLIssuer: issuer, Grace: f.Grace, Skew: f.Skew, At: f.At}
	if err := checkCRL(g); err != nil {
		var ve *VerifyError
		if errors.As(err, &ve) {
			d := *ve
			if crl == nil {
				d.Detail = fmt.Sprintf("no CRL of %q, the issuer of CA %q on the path", parent.Subject, ca.Subject)
			} else {
				d.Detail = fmt.Sprintf("%s (the CRL of %q, which must vouch for CA %q on the path)", ve.Detail, parent.Subject, ca.Subject)
			}
			return &d
		}
		return err
	}
	if lk, ok := crl.(interface {
		Lookup(*big.Int) (Entry, bool)
	}); ok {
		if e, revoked := lk.Lookup(ca.SerialNumber); revoked {
			return &VerifyError{Reason: ReasonRevoked, Revocation: &e,
				Detail: fmt.Sprintf("CA %q on the path (serial %x) revoked by %q at %s (%s)",
					ca.Subject, ca.SerialNumber, parent.Subject, rfc3339(e.RevokedAt), e.Reason)}
		}
	} else if crl.IsRevoked(ca.SerialNumber) {
		return &VerifyError{Reason: ReasonRevoked,
			Detail: fmt.Sprintf("CA %q on the path (serial %x) is on the CRL of %q", ca.Subject, ca.SerialNumber, parent.Subject)}
	}
	return nil
}

// CRLOf returns the CRL of crls that ca issued, or the zero IssuedCRL.
func CRLOf(crls []IssuedCRL, ca *x509.Certificate) IssuedCRL {
	for _, c := range crls {
		if c.Issuer != nil && c.CRL != nil && c.Issuer.Equal(ca) {
			return c
		}
	}
	return IssuedCRL{}
}

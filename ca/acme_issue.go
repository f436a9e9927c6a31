package ca

// Issuance for ACME orders: the identifiers an order may name, and the
// certificate of a finalized order.

import (
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"
)

// CheckACMEIdentifiers checks an order's identifiers against p and the
// CA's name constraints (of every CA of the chain): nil, or an error
// matching ErrACMEIdentifier naming the first refused. Each must be well
// formed (NormalizeACMEIdentifier); an order has 1 to MaxACMEIdentifiers.
func (c *CA) CheckACMEIdentifiers(p *ACMEPolicy, ids []ACMEIdentifier) error {
	if len(ids) == 0 || len(ids) > MaxACMEIdentifiers {
		return fmt.Errorf("%w: an order has %d identifiers: want 1 to %d", ErrACMEIdentifier, len(ids), MaxACMEIdentifiers)
	}
	for _, id := range ids {
		n, err := NormalizeACMEIdentifier(id)
		if err != nil {
			return err
		}
		if err := p.Allows(n); err != nil {
			return err
		}
		var probe x509.Certificate
		if n.Type == "dns" {
			probe.DNSNames = []string{n.Value}
		} else {
			probe.IPAddresses = []net.IP{net.IP(netip.MustParseAddr(n.Value).AsSlice())}
		}
		if err := c.checkChainConstraints(&probe); err != nil {
			return fmt.Errorf("%w: %w", ErrACMEIdentifier, err)
		}
	}
	return nil
}

// ACMEOrder is what IssueACME certifies: an order whose identifiers are
// all authorized, and the account that finalizes it.
type ACMEOrder struct {
	Account     string // the ACME account ID, kept in the record
	Identifiers []ACMEIdentifier
	Policy      ACMEPolicy
}

// IssueACME signs the certificate of a finalized order for the key of
// csr. The CSR must be signed by its key, the key strong enough
// (CheckPublicKey), ask for no CA, and name exactly the order's
// identifiers (its CN, if any, one of them); else an error matching
// ErrACMECSR. The certificate's name (its record's) is the first DNS
// identifier, else the first IP; a name may have several valid ACME
// certificates at once (renewals overlap). Profile server, with
// clientAuth when Policy.Client; lifetime Policy.Lifetime within the CA's.
// The record carries the account. A CA revoked at its root issues nothing
// (CheckACMEIssuer). It moves none of the name's current.* links (see
// Current). The caller must hold the lock.
//
// The identifiers are checked again (CheckACMEIdentifiers). As RFC 8555
// section 7.4 has it, a name may be in the CSR's SAN or its CN or both;
// the CSR may ask for nothing else (no email or URI). The certificate
// carries the identifiers (DNS names, then IPs, in the order's order) and
// a CN of the first that fits in 64 characters (none when none does); its
// subject has nothing else. Its name in the CA directory is the first
// identifier as ACMECertName makes it a name. A lifetime that would
// outlast the CA certificate is cut to end with it.
func (c *CA) IssueACME(signer crypto.Signer, o ACMEOrder, csr *x509.CertificateRequest) (*Issued, error) {
	if err := c.CheckACMEIssuer(); err != nil {
		return nil, err
	}
	req, err := c.acmeRequest(o, csr)
	if err != nil {
		return nil, err
	}
	return c.Issue(signer, req)
}

// acmeRequest checks a finalized order and its CSR as IssueACME does and
// returns the request to issue.
func (c *CA) acmeRequest(o ACMEOrder, csr *x509.CertificateRequest) (Request, error) {
	if err := c.CheckACMEIdentifiers(&o.Policy, o.Identifiers); err != nil {
		return Request{}, err
	}
	ids := make([]ACMEIdentifier, len(o.Identifiers))
	for i, id := range o.Identifiers {
		ids[i], _ = NormalizeACMEIdentifier(id) // checked above
	}
	if err := checkACMECSR(csr, ids); err != nil {
		return Request{}, err
	}
	req := Request{Profile: Server, PublicKey: csr.PublicKey, Force: true,
		acmeAccount: o.Account, alsoClientAuth: o.Policy.Client}
	seen := map[ACMEIdentifier]bool{}
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		if id.Type == "dns" {
			req.DNSNames = append(req.DNSNames, id.Value)
		} else {
			req.IPs = append(req.IPs, net.IP(netip.MustParseAddr(id.Value).AsSlice()))
		}
	}
	first := slices.IndexFunc(ids, func(id ACMEIdentifier) bool { return id.Type == "dns" })
	if first < 0 {
		first = 0
	}
	req.Name = ACMECertName(ids[first])
	if cn := slices.IndexFunc(ids, func(id ACMEIdentifier) bool { return len(id.Value) <= 64 && id.Type == "dns" }); cn >= 0 {
		req.CommonName = ids[cn].Value
	} else if len(req.IPs) > 0 {
		req.CommonName = req.IPs[0].String()
	} else {
		req.noCommonName = true
	}
	lifetime, err := c.acmeLifetime(o.Policy.Lifetime)
	if err != nil {
		return Request{}, err
	}
	req.Validity = lifetime
	return req, nil
}

// acmeLifetime is the lifetime of an ACME certificate issued now for a
// binding's lifetime (0: DefaultACMELifetime), cut so that it ends with
// the CA certificate, a minute early so that the clock read again by
// Issue does not push it past.
func (c *CA) acmeLifetime(lifetime time.Duration) (time.Duration, error) {
	if lifetime == 0 {
		lifetime = DefaultACMELifetime
	}
	notBefore := c.Now().UTC().Truncate(time.Second).Add(-Backdate)
	if notBefore.Before(c.Cert.NotBefore) {
		notBefore = c.Cert.NotBefore
	}
	if notBefore.Add(lifetime).After(c.Cert.NotAfter) {
		lifetime = c.Cert.NotAfter.Sub(notBefore) - time.Minute
		if lifetime < MinValidity {
			return 0, fmt.Errorf("%w: the CA certificate expires on %s, too soon for any certificate", ErrOutlivesCA, c.Cert.NotAfter.UTC().Format(time.RFC3339))
		}
	}
	return lifetime, nil
}

// checkACMECSR checks the CSR of a finalize for the order's identifiers
// ids (normalized): its signature, its key, no CA:TRUE, and the same
// names: every one of ids in its SAN or CN, nothing else.
func checkACMECSR(csr *x509.CertificateRequest, ids []ACMEIdentifier) error {
	if err := csr.CheckSignature(); err != nil {
		return fmt.Errorf("%w: its signature: %v", ErrACMECSR, err)
	}
	if err := CheckPublicKey(csr.PublicKey); err != nil {
		return fmt.Errorf("%w: %v", ErrACMECSR, err)
	}
	if slices.Contains(IgnoredCSRExtensions(csr), "basicConstraints (CA:TRUE)") {
		return fmt.Errorf("%w: it asks to be a CA (basicConstraints CA:TRUE)", ErrACMECSR)
	}
	if len(csr.EmailAddresses) > 0 || len(csr.URIs) > 0 {
		return fmt.Errorf("%w: it asks for %s; an order has only DNS names and IP addresses", ErrACMECSR,
			sanList(csrSANList(&x509.CertificateRequest{EmailAddresses: csr.EmailAddresses, URIs: csr.URIs})))
	}
	var got []ACMEIdentifier
	add := func(id ACMEIdentifier) error {
		n, err := NormalizeACMEIdentifier(id)
		if err != nil || !slices.Contains(ids, n) {
			return fmt.Errorf("%w: it asks for %s, which the order does not name", ErrACMECSR, id)
		}
		got = append(got, n)
		return nil
	}
	for _, d := range csr.DNSNames {
		if err := add(ACMEIdentifier{Type: "dns", Value: d}); err != nil {
			return err
		}
	}
	for _, ip := range csr.IPAddresses {
		if err := add(ACMEIdentifier{Type: "ip", Value: ip.String()}); err != nil {
			return err
		}
	}
	if cn := csr.Subject.CommonName; cn != "" {
		id := ACMEIdentifier{Type: "dns", Value: cn}
		if _, err := netip.ParseAddr(cn); err == nil {
			id.Type = "ip"
		}
		if add(id) != nil {
			return fmt.Errorf("%w: its common name %s is not one of the order's identifiers", ErrACMECSR, printable(cn))
		}
	}
	for _, id := range ids {
		if !slices.Contains(got, id) {
			return fmt.Errorf("%w: it does not ask for %s, which the order names", ErrACMECSR, id)
		}
	}
	return nil
}

// ACMECertName is the name in the CA directory of an ACME certificate
// whose first identifier is id (normalized): the DNS name or the IPv4
// address itself when it is a valid name (ValidateName: at most 64
// characters); a wildcard "*.B" as "wildcard_.B"; an IPv6 address with
// its colons as underscores after "ip6_"; and a name longer than 64
// characters cut to 55, with "_" and 8 hex digits of the SHA-256 of the
// whole. A "_" is in no DNS name, so a made-up name never is a host's.
func ACMECertName(id ACMEIdentifier) string {
	v := id.Value
	switch {
	case id.Type == "ip" && strings.Contains(v, ":"):
		v = "ip6_" + strings.ReplaceAll(v, ":", "_")
	case strings.HasPrefix(v, "*."):
		v = "wildcard_" + v[1:]
	}
	if len(v) > 64 {
		sum := sha256.Sum256([]byte(id.Value))
		v = v[:55] + "_" + hex.EncodeToString(sum[:4])
	}
	return v
}

// acmeRenewMark is a renew-now mark's object: certificates issued at or
// before At renew now.
type acmeRenewMark struct {
	At time.Time `json:"at"`
}

package ca

import (
	"crypto/x509"
	"fmt"
	"net"
	"strings"
)

// validateEmailConstraint checks a permitted email constraint: a mailbox
// (user@example.com), a host (example.com) or a domain (.example.com).
func validateEmailConstraint(c string) error {
	if strings.Contains(c, "@") {
		return ValidateEmail(c)
	}
	if err := ValidateDNSName(strings.TrimPrefix(c, ".")); err != nil {
		return fmt.Errorf("permitted email domain: %w", err)
	}
	return nil
}

// checkNameConstraints refuses a leaf whose SANs fall outside the CA's
// permitted subtrees (RFC 5280 4.2.1.10), before anything is signed.
func checkNameConstraints(ca *x509.Certificate, leaf *x509.Certificate) error {
	if len(ca.PermittedDNSDomains) > 0 {
		for _, name := range leaf.DNSNames {
			if !anyMatch(ca.PermittedDNSDomains, name, matchDNS) {
				return fmt.Errorf("DNS name %q is outside the CA's permitted DNS domains (%s)", name, strings.Join(ca.PermittedDNSDomains, ", "))
			}
		}
	}
	if len(ca.PermittedEmailAddresses) > 0 {
		for _, email := range leaf.EmailAddresses {
			if !anyMatch(ca.PermittedEmailAddresses, email, matchEmail) {
				return fmt.Errorf("email %q is outside the CA's permitted email domains (%s)", email, strings.Join(ca.PermittedEmailAddresses, ", "))
			}
		}
	}
	if len(ca.PermittedIPRanges) > 0 {
		for _, ip := range leaf.IPAddresses {
			if !ipPermitted(ca.PermittedIPRanges, ip) {
				return fmt.Errorf("IP address %s is outside the CA's permitted IP ranges", ip)
			}
		}
	}
	return nil
}

func anyMatch(constraints []string, name string, match func(c, name string) bool) bool {
	for _, c := range constraints {
		if match(strings.ToLower(c), strings.ToLower(name)) {
			return true
		}
	}
	return false
}

// matchDNS: "example.com" permits itself and every subdomain; ".example.com"
// only subdomains.
func matchDNS(c, name string) bool {
	name = strings.TrimPrefix(name, "*.")
	if strings.HasPrefix(c, ".") {
		return strings.HasSuffix(name, c)
	}
	return name == c || strings.HasSuffix(name, "."+c)
}

// matchEmail: "user@example.com" permits that mailbox, "example.com" every
// mailbox on that host, ".example.com" every mailbox on its subdomains.
func matchEmail(c, email string) bool {
	if strings.Contains(c, "@") {
		return email == c
	}
	host := email[strings.LastIndexByte(email, '@')+1:]
	if strings.HasPrefix(c, ".") {
		return strings.HasSuffix(host, c)
	}
	return host == c
}

func ipPermitted(ranges []*net.IPNet, ip net.IP) bool {
	for _, r := range ranges {
		if r.Contains(ip) {
			return true
		}
	}
	return false
}

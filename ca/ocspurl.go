package ca

import "fmt"

// ValidateOCSPURL checks an OCSP responder URL for the authority
// information access extension (RFC 5280 section 4.2.2.1): absolute http or
// https with a host, in plain ASCII. `minica serve` answers OCSP there.
func ValidateOCSPURL(s string) error {
	if !isHTTPURL(s) {
		return fmt.Errorf("invalid OCSP URL %s: want an http:// or https:// URL such as http://pki.example.com/ocsp", printable(s))
	}
	return nil
}

// SetOCSPURL records the OCSP responder URL that every leaf issued from now
// on carries in its authority information access; "" removes it.
// Certificates already issued are unchanged. The caller must hold the lock
// (see Lock).
func (c *CA) SetOCSPURL(u string) error {
	if u != "" {
		if err := ValidateOCSPURL(u); err != nil {
			return err
		}
	}
	s := c.Settings
	s.OCSPURL = u
	return c.saveSettings(s)
}

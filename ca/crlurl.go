package ca

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
)

// ValidateCRLURL checks a CRL distribution point URL: absolute http or
// https with a host, in plain ASCII. RFC 5280 section 4.2.1.13 lets the
// HTTP URL serve the DER CRL that `minica crl --out` writes.
func ValidateCRLURL(s string) error {
	if !isHTTPURL(s) {
		return fmt.Errorf("invalid CRL URL %s: want an http:// or https:// URL such as http://pki.example.com/ca.crl", printable(s))
	}
	return nil
}

// isHTTPURL reports whether s is an absolute http or https URL with a host
// and no user or fragment, in printable ASCII.
func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && isCleanText(s) && strings.IndexFunc(s, func(r rune) bool { return r <= ' ' || r > '~' }) < 0 &&
		(u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil && u.Fragment == ""
}

// SetCRLURL records the CRL distribution point that every leaf issued from
// now on carries; "" removes it. Certificates already issued are unchanged.
// The caller must hold the lock (see Lock).
func (c *CA) SetCRLURL(u string) error {
	if u != "" {
		if err := ValidateCRLURL(u); err != nil {
			return err
		}
	}
	s := c.Settings
	s.CRLURL = u
	return c.saveSettings(s)
}

// saveSettings replaces settings.json with s, atomically, and then c.Settings.
func (c *CA) saveSettings(s Settings) error {
	data, _ := json.MarshalIndent(s, "", "  ") // Settings always marshal
	if err := c.dir.WriteAtomic(settingsFile, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("saving CA settings: %w", err)
	}
	c.Settings = s
	return nil
}

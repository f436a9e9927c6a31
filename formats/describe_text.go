package formats

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"
)

// WriteText writes d for people: the summary line, then one indented
// section per object, one "Label: value" line per fact.
func (d *Description) WriteText(w io.Writer) error {
	tw := &textWriter{w: bufio.NewWriter(w)}
	tw.line("%s", d.Summary)
	if p := d.PKCS12; p != nil {
		tw.section("PKCS#12")
		tw.field("Protection", p.Protection)
		tw.field("Key encryption", p.Encryption.KeyEncryption+kdfNote(p.Encryption))
		tw.field("MAC", macNote(p.Encryption))
		if p.Locked {
			tw.field("Contents", "locked (give the password to list them)")
		} else {
			tw.field("Contents", fmt.Sprintf("private key, certificate and %s",
				plural(p.ChainLength, "CA certificate", "CA certificates")))
		}
	}
	if k := d.Key; k != nil {
		tw.section("Private key")
		tw.keyFields(k)
	}
	if k := d.PublicKey; k != nil {
		tw.section("Public key")
		tw.keyFields(k)
	}
	if d.KeyMatches != nil {
		tw.field("Matches", yesNo(*d.KeyMatches, "the first certificate", "NOT the first certificate"))
	}
	for i, c := range d.Certificates {
		title := "Certificate"
		if len(d.Certificates) > 1 {
			title = fmt.Sprintf("Certificate %d of %d", i+1, len(d.Certificates))
		}
		tw.section(title)
		tw.certFields(&c)
	}
	if c := d.CSR; c != nil {
		tw.section("Certificate request")
		tw.field("Subject", c.Subject)
		tw.field("SANs", sans(c.DNSNames, c.IPAddresses, c.EmailAddresses, c.URIs))
		tw.field("Key", c.Key)
		tw.field("Signature", c.SignatureAlgorithm+yesNo(c.SignatureValid, ", valid", ", INVALID"))
		tw.field("Key SHA-256", c.PublicKeySHA256)
	}
	if c := d.CRL; c != nil {
		tw.crlFields(c)
	}
	return tw.flush()
}

type textWriter struct {
	w   *bufio.Writer
	err error
}

func (t *textWriter) line(format string, args ...any) {
	if t.err == nil {
		_, t.err = fmt.Fprintf(t.w, format+"\n", args...)
	}
}

func (t *textWriter) section(title string) {
	t.line("")
	t.line("%s", title)
}

// field writes an indented "Label: value" line; empty values are left out.
func (t *textWriter) field(label, value string) {
	if value != "" {
		t.line("  %-16s %s", label+":", value)
	}
}

func (t *textWriter) flush() error {
	if t.err != nil {
		return t.err
	}
	return t.w.Flush()
}

func (t *textWriter) keyFields(k *KeyInfo) {
	t.field("Type", k.Type)
	t.field("Format", k.Format)
	if k.Encrypted && k.Type == "" {
		t.field("Encrypted", "yes (give the password to read the key)")
	} else {
		t.field("Encrypted", yesNo(k.Encrypted, "yes", "no"))
	}
	t.field("Key SHA-256", k.PublicKeySHA256)
}

func (t *textWriter) certFields(c *CertificateInfo) {
	t.field("Subject", c.Subject)
	t.field("Issuer", c.Issuer+yesNo(c.SelfSigned, " (self-signed)", ""))
	t.field("SANs", sans(c.DNSNames, c.IPAddresses, c.EmailAddresses, c.URIs))
	t.field("Valid", fmt.Sprintf("%s to %s", c.NotBefore.Format(time.DateTime), c.NotAfter.Format(time.DateTime)+" UTC"))
	t.field("Status", statusNote(c))
	t.field("Key", c.Key)
	t.field("Key usage", strings.Join(c.KeyUsage, ", "))
	t.field("Ext key usage", strings.Join(c.ExtKeyUsage, ", "))
	t.field("CA", yesNo(c.IsCA, "yes", "no"))
	t.field("Serial", c.SerialColon)
	t.field("Signature", c.SignatureAlgorithm)
	t.field("SHA-256", c.SHA256)
	t.field("SHA-1", c.SHA1)
	t.field("Key SHA-256", c.PublicKeySHA256)
}

func (t *textWriter) crlFields(c *CRLInfo) {
	t.section("CRL")
	t.field("Issuer", c.Issuer)
	t.field("Number", c.Number)
	t.field("This update", c.ThisUpdate.Format(time.DateTime)+" UTC")
	if c.NextUpdate != nil {
		t.field("Next update", fmt.Sprintf("%s UTC (%s)", c.NextUpdate.Format(time.DateTime), daysNote(*c.DaysLeft)))
	}
	t.field("Signature", c.SignatureAlgorithm)
	t.field("Authority key", c.AuthorityKeyID)
	t.field("Scope", scopeNote(c))
	if p := c.DistributionPoint; p != nil {
		t.field("Distribution pt", strings.Join(p.Names, ", "))
	}
	t.field("Entries", fmt.Sprint(len(c.Entries)))
	width := 0
	for _, e := range c.Entries {
		width = max(width, len(e.Serial))
	}
	for _, e := range c.Entries {
		entry := fmt.Sprintf("    %-*s  %s UTC  %s", width, e.Serial, e.RevokedAt.Format(time.DateTime), e.Reason)
		t.line("%s", strings.TrimRight(entry, " "))
	}
}

func statusNote(c *CertificateInfo) string {
	if c.Status == "not yet valid" {
		return c.Status
	}
	return c.Status + " (" + daysNote(c.DaysLeft) + ")"
}

func daysNote(days int) string {
	switch {
	case days < -1:
		return fmt.Sprintf("%d days ago", -days)
	case days < 0:
		return "1 day ago"
	case days == 1:
		return "1 day left"
	}
	return fmt.Sprintf("%d days left", days)
}

func kdfNote(e *P12Encryption) string {
	if e.KDF == "" {
		return ""
	}
	return fmt.Sprintf(" (%s, %d iterations)", e.KDF, e.Iterations)
}

func macNote(e *P12Encryption) string {
	if e.MACIterations == 0 {
		return e.MAC
	}
	return fmt.Sprintf("%s (%s)", e.MAC, plural(e.MACIterations, "iteration", "iterations"))
}

func sans(dns, ips, emails, uris []string) string {
	var all []string
	for _, group := range []struct {
		prefix string
		values []string
	}{{"DNS:", dns}, {"IP:", ips}, {"email:", emails}, {"URI:", uris}} {
		for _, v := range group.values {
			all = append(all, group.prefix+v)
		}
	}
	return strings.Join(all, ", ")
}

func yesNo(b bool, yes, no string) string {
	if b {
		return yes
	}
	return no
}

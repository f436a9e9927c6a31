package main

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"minica/formats"
)

// certs-in FILE N [CN...]: FILE holds N PEM certificates, with these
// common names in order when given.
func cmdCertsIn(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 || neg {
		ts.Fatalf("usage: certs-in FILE N [CN...]")
	}
	certs := readPEMCerts(ts, args[0])
	want, err := strconv.Atoi(args[1])
	ts.Check(err)
	if len(certs) != want {
		ts.Fatalf("%s holds %d certificates; want %d", args[0], len(certs), want)
	}
	for i, cn := range args[2:] {
		if got := certs[i].Subject.CommonName; got != cn {
			ts.Fatalf("%s: certificate %d is %q; want %q", args[0], i, got, cn)
		}
	}
}

// ca-cert FILE FIELD VALUE: a CA field of the first certificate of FILE:
// pathlen (-1 for none), nc (its name constraints, summed up), crldp,
// ocsp, or signed-by (VALUE is the issuer's certificate file: the
// signature verifies and the AKI is the issuer's SKI).
func cmdCACert(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: ca-cert FILE FIELD VALUE")
	}
	cert := readPEMCerts(ts, args[0])[0]
	var got string
	switch args[1] {
	case "pathlen":
		got = "-1"
		if cert.BasicConstraintsValid && cert.IsCA && (cert.MaxPathLen > 0 || cert.MaxPathLenZero) {
			got = strconv.Itoa(cert.MaxPathLen)
		}
	case "nc":
		got = ncSummary(cert)
	case "crldp":
		got = strings.Join(cert.CRLDistributionPoints, ",")
	case "ocsp":
		got = strings.Join(cert.OCSPServer, ",")
	case "signed-by":
		issuer := readPEMCerts(ts, args[2])[0]
		ok := cert.CheckSignatureFrom(issuer) == nil && bytes.Equal(cert.AuthorityKeyId, issuer.SubjectKeyId)
		if ok == neg {
			ts.Fatalf("%s signed by %s (AKI = SKI): %v", args[0], args[2], ok)
		}
		return
	default:
		ts.Fatalf("unknown field %q", args[1])
	}
	if (got == args[2]) == neg {
		ts.Fatalf("%s: %s = %q; want %s%q", args[0], args[1], got, map[bool]string{true: "not ", false: ""}[neg], args[2])
	}
}

// ncSummary writes a certificate's name constraints as "critical
// permit=dns:a,email:b exclude=dns:c", or "none".
func ncSummary(c *x509.Certificate) string {
	var permit, exclude []string
	add := func(dst *[]string, kind string, v []string) {
		for _, s := range v {
			*dst = append(*dst, kind+":"+s)
		}
	}
	add(&permit, "dns", c.PermittedDNSDomains)
	add(&permit, "email", c.PermittedEmailAddresses)
	add(&permit, "uri", c.PermittedURIDomains)
	for _, n := range c.PermittedIPRanges {
		permit = append(permit, "ip:"+n.String())
	}
	add(&exclude, "dns", c.ExcludedDNSDomains)
	add(&exclude, "email", c.ExcludedEmailAddresses)
	add(&exclude, "uri", c.ExcludedURIDomains)
	for _, n := range c.ExcludedIPRanges {
		exclude = append(exclude, "ip:"+n.String())
	}
	if len(permit)+len(exclude) == 0 {
		return "none"
	}
	crit := "noncritical"
	if c.PermittedDNSDomainsCritical {
		crit = "critical"
	}
	return fmt.Sprintf("%s permit=%s exclude=%s", crit, strings.Join(permit, ","), strings.Join(exclude, ","))
}

// p12-certs FILE PASSWORDFILE CN...: the .p12 holds a key, a leaf of the
// first CN and a chain of the others, in order.
func cmdP12Certs(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 3 || neg {
		ts.Fatalf("usage: p12-certs FILE PASSWORDFILE CN...")
	}
	data, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	pw, err := os.ReadFile(ts.MkAbs(args[1]))
	ts.Check(err)
	key, leaf, chain, err := formats.DecodeP12(data, strings.TrimRight(string(pw), "\r\n"))
	ts.Check(err)
	if key == nil {
		ts.Fatalf("%s holds no key", args[0])
	}
	got := []string{leaf.Subject.CommonName}
	for _, c := range chain {
		got = append(got, c.Subject.CommonName)
	}
	if strings.Join(got, "|") != strings.Join(args[2:], "|") {
		ts.Fatalf("%s holds %q; want %q", args[0], got, args[2:])
	}
}

func readPEMCerts(ts *testscript.TestScript, file string) []*x509.Certificate {
	data, err := os.ReadFile(ts.MkAbs(file))
	ts.Check(err)
	var certs []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		ts.Check(err)
		certs = append(certs, cert)
	}
	if len(certs) == 0 {
		ts.Fatalf("%s: no PEM certificate", file)
	}
	return certs
}

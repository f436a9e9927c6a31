package main

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"minica/formats"
)

// The CRL checks of the revocation scripts, parsed with crypto/x509.
func init() {
	scriptCommands["crl-has"] = cmdCRLHas
	scriptCommands["crl-number"] = cmdCRLNumber
	scriptCommands["crl-number-grows"] = cmdCRLNumberGrows
	scriptCommands["crl-signed"] = cmdCRLSigned
	scriptCommands["serialvar"] = cmdSerialVar
}

// serialvar VAR CERT [colons]: sets VAR to CERT's serial in lowercase hex,
// or in uppercase pairs joined by colons, the way openssl prints it.
func cmdSerialVar(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: serialvar VAR CERT [colons]")
	}
	hex := fmt.Sprintf("%x", readScriptCert(ts, args[1]).SerialNumber)
	if len(args) == 3 {
		if len(hex)%2 == 1 {
			hex = "0" + hex
		}
		var pairs []string
		for i := 0; i < len(hex); i += 2 {
			pairs = append(pairs, strings.ToUpper(hex[i:i+2]))
		}
		hex = strings.Join(pairs, ":")
	}
	ts.Setenv(args[0], hex)
}

func readCRL(ts *testscript.TestScript, file string) *x509.RevocationList {
	data, err := os.ReadFile(ts.MkAbs(file))
	ts.Check(err)
	if block, _ := pem.Decode(data); block != nil {
		if block.Type != "X509 CRL" {
			ts.Fatalf("%s: PEM block %q, not X509 CRL", file, block.Type)
		}
		data = block.Bytes
	}
	crl, err := x509.ParseRevocationList(data)
	if err != nil {
		ts.Fatalf("%s: %v", file, err)
	}
	return crl
}

// crl-has CRL CERT [REASON]: the CRL lists CERT's serial (with that reason
// name, if given).
func cmdCRLHas(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: crl-has CRL CERT [REASON]")
	}
	crl := readCRL(ts, args[0])
	cert := readScriptCert(ts, args[1])
	found := false
	for _, e := range crl.RevokedCertificateEntries {
		if e.SerialNumber.Cmp(cert.SerialNumber) == 0 {
			found = true
			if len(args) == 3 && !strings.EqualFold(reasonName(e.ReasonCode), args[2]) {
				ts.Fatalf("%s lists %s with reason %s; want %s", args[0], args[1], reasonName(e.ReasonCode), args[2])
			}
		}
	}
	if found == neg {
		ts.Fatalf("%s lists %s: %v; want %v", args[0], args[1], found, !neg)
	}
}

func reasonName(code int) string {
	names := []string{"unspecified", "keyCompromise", "cACompromise", "affiliationChanged", "superseded",
		"cessationOfOperation", "certificateHold", "", "removeFromCRL", "privilegeWithdrawn", "aACompromise"}
	if code < 0 || code >= len(names) {
		return "?"
	}
	return names[code]
}

func readScriptCert(ts *testscript.TestScript, file string) *x509.Certificate {
	data, err := os.ReadFile(ts.MkAbs(file))
	ts.Check(err)
	certs, err := formats.ParseCertificates(data)
	if err != nil {
		ts.Fatalf("%s: %v", file, err)
	}
	return certs[0]
}

// crl-number CRL N: the CRL's number is N.
func cmdCRLNumber(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: crl-number CRL N")
	}
	got := readCRL(ts, args[0]).Number.String()
	if (got == args[1]) == neg {
		ts.Fatalf("%s: number %s; want %s", args[0], got, args[1])
	}
}

// crl-number-grows A B...: each CRL's number is greater than the one before.
func cmdCRLNumberGrows(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: crl-number-grows A B...")
	}
	var prev *big.Int
	for _, f := range args {
		n := readCRL(ts, f).Number
		if prev != nil && n.Cmp(prev) <= 0 {
			ts.Fatalf("%s: number %s is not greater than %s", f, n, prev)
		}
		prev = n
	}
}

// crl-signed CRL CACERT: the CRL verifies against the CA certificate and
// carries its authority key identifier.
func cmdCRLSigned(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: crl-signed CRL CACERT")
	}
	crl := readCRL(ts, args[0])
	caCert := readScriptCert(ts, args[1])
	if err := crl.CheckSignatureFrom(caCert); err != nil {
		ts.Fatalf("%s: %v", args[0], err)
	}
	if string(crl.AuthorityKeyId) != string(caCert.SubjectKeyId) {
		ts.Fatalf("%s: authority key identifier %x; want %x", args[0], crl.AuthorityKeyId, caCert.SubjectKeyId)
	}
}

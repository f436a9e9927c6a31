package main

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"math/big"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	scriptCommands["make-crl"] = cmdMakeCRL
}

// make-crl CADIR OUT [OPTION...]: writes a DER CRL signed with the
// unencrypted key of the CA in CADIR, numbered 100, valid from the start of
// MINICA_TEST_NOW (or now) for a week. Options: revoke=CERT, delta=BASE,
// idp=FIELDS (comma-separated: dp, user, ca, reasons, indirect, attr),
// noncritical (the IDP and delta indicator), number=N, tamper (flips a
// byte of the signed part).
func cmdMakeCRL(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: make-crl CADIR OUT [OPTION...]")
	}
	dir := ts.MkAbs(args[0])
	caCert := readScriptCert(ts, dir+"/ca.crt")
	keyPEM, err := os.ReadFile(dir + "/ca.key")
	ts.Check(err)
	block, _ := pem.Decode(keyPEM)
	if block == nil || block.Type != "PRIVATE KEY" {
		ts.Fatalf("%s/ca.key: not an unencrypted PKCS#8 key", dir)
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	ts.Check(err)
	now := time.Now()
	if v := ts.Getenv("MINICA_TEST_NOW"); v != "" {
		now, err = time.Parse(time.RFC3339, v)
		ts.Check(err)
	}
	tmpl := &x509.RevocationList{Number: big.NewInt(100), ThisUpdate: now, NextUpdate: now.Add(7 * 24 * time.Hour)}
	critical, tamper := true, false
	var idp []byte
	var delta *big.Int
	for _, opt := range args[2:] {
		name, value, _ := strings.Cut(opt, "=")
		switch name {
		case "revoke":
			cert := readScriptCert(ts, value)
			tmpl.RevokedCertificateEntries = append(tmpl.RevokedCertificateEntries,
				x509.RevocationListEntry{SerialNumber: cert.SerialNumber, RevocationTime: now.Add(-time.Hour)})
		case "delta":
			base, err := strconv.ParseInt(value, 10, 64)
			ts.Check(err)
			delta = big.NewInt(base)
		case "number":
			n, err := strconv.ParseInt(value, 10, 64)
			ts.Check(err)
			tmpl.Number = big.NewInt(n)
		case "idp":
			idp = idpValue(ts, strings.Split(value, ","))
		case "noncritical":
			critical = false
		case "tamper":
			tamper = true
		default:
			ts.Fatalf("make-crl: unknown option %q", opt)
		}
	}
	if delta != nil {
		v, err := asn1.Marshal(delta)
		ts.Check(err)
		tmpl.ExtraExtensions = append(tmpl.ExtraExtensions, pkix.Extension{Id: asn1.ObjectIdentifier{2, 5, 29, 27}, Critical: critical, Value: v})
	}
	if idp != nil {
		tmpl.ExtraExtensions = append(tmpl.ExtraExtensions, pkix.Extension{Id: asn1.ObjectIdentifier{2, 5, 29, 28}, Critical: critical, Value: idp})
	}
	der, err := x509.CreateRevocationList(rand.Reader, tmpl, caCert, key.(crypto.Signer))
	ts.Check(err)
	if tamper {
		crl, err := x509.ParseRevocationList(der)
		ts.Check(err)
		// The last octet of the signed part, the CRL number's: it still parses.
		i := strings.Index(string(der), string(crl.RawTBSRevocationList)) + len(crl.RawTBSRevocationList) - 1
		der[i] ^= 0x01
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), der, 0o644))
}

// idpValue encodes an IssuingDistributionPoint (RFC 5280 section 5.2.5)
// with the given fields.
func idpValue(ts *testscript.TestScript, fields []string) []byte {
	type idp struct {
		DistributionPoint asn1.RawValue  `asn1:"optional,tag:0"`
		OnlyUser          bool           `asn1:"optional,tag:1"`
		OnlyCA            bool           `asn1:"optional,tag:2"`
		OnlySomeReasons   asn1.BitString `asn1:"optional,tag:3"`
		Indirect          bool           `asn1:"optional,tag:4"`
		OnlyAttr          bool           `asn1:"optional,tag:5"`
	}
	var v idp
	for _, f := range fields {
		switch f {
		case "dp":
			uri := asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 6, Bytes: []byte("http://crl.example.com/root.crl")}
			uriDER, err := asn1.Marshal(uri)
			ts.Check(err)
			full, err := asn1.Marshal(asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 0, IsCompound: true, Bytes: uriDER})
			ts.Check(err)
			v.DistributionPoint = asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 0, IsCompound: true, Bytes: full}
		case "user":
			v.OnlyUser = true
		case "ca":
			v.OnlyCA = true
		case "reasons": // keyCompromise, cACompromise
			v.OnlySomeReasons = asn1.BitString{Bytes: []byte{0x60}, BitLength: 3}
		case "indirect":
			v.Indirect = true
		case "attr":
			v.OnlyAttr = true
		default:
			ts.Fatalf("make-crl: unknown IDP field %q", f)
		}
	}
	der, err := asn1.Marshal(v)
	ts.Check(err)
	return der
}

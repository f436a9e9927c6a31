package main

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"minica/internal/dertest"
)

// scriptCommands are the custom testscript commands; each parses what it
// checks with crypto/x509.
var scriptCommands = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	"mode":        cmdMode,
	"cert":        cmdCert,
	"named":       cmdNamed,
	"gencsr":      cmdGenCSR,
	"snapshot":    cmdSnapshot,
	"unchanged":   cmdUnchanged,
	"patch-int":   cmdPatchInt,
	"crl-server":  cmdCRLServer,
	"cmp-current": cmdCmpCurrent,
	"certs-in":    cmdCertsIn,
	"ca-cert":     cmdCACert,
	"p12-certs":   cmdP12Certs,
}

// cmp-current NAME ISSUED.json: $MINICA_DIR/certs/NAME/current.{crt,key,
// chain.pem} hold the files of the certificate that the JSON output of
// 'minica issue' names.
func cmdCmpCurrent(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 || neg {
		ts.Fatalf("usage: cmp-current NAME ISSUED.json")
	}
	var issued struct{ Cert, Key, Chain string }
	data, err := os.ReadFile(ts.MkAbs(args[1]))
	ts.Check(err)
	ts.Check(json.Unmarshal(data, &issued))
	dir := filepath.Join(ts.Getenv("MINICA_DIR"), "certs", args[0])
	for link, file := range map[string]string{"current.crt": issued.Cert, "current.key": issued.Key, "current.chain.pem": issued.Chain} {
		got, err := os.ReadFile(filepath.Join(dir, link))
		ts.Check(err)
		want, err := os.ReadFile(file)
		ts.Check(err)
		if !bytes.Equal(got, want) {
			ts.Fatalf("%s is not %s", link, file)
		}
	}
}

// patch-int FILE OLD NEW: rewrites the DER (or first PEM block) of FILE with
// every INTEGER of value OLD set to NEW, fixing the lengths around it.
func cmdPatchInt(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 || neg {
		ts.Fatalf("usage: patch-int FILE OLD NEW")
	}
	old, err := strconv.ParseInt(args[1], 10, 64)
	ts.Check(err)
	repl, ok := new(big.Int).SetString(args[2], 10)
	if !ok {
		ts.Fatalf("bad integer %q", args[2])
	}
	data, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	block, _ := pem.Decode(data)
	der := data
	if block != nil {
		der = block.Bytes
	}
	out, err := dertest.PatchInteger(der, old, repl, 0)
	ts.Check(err)
	if block != nil {
		out = pem.EncodeToMemory(&pem.Block{Type: block.Type, Bytes: out})
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), out, 0o600))
}

// mode PERM FILE: the file's permission bits are PERM (octal).
func cmdMode(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: mode PERM FILE")
	}
	want, err := strconv.ParseUint(args[0], 8, 32)
	ts.Check(err)
	info, err := os.Stat(ts.MkAbs(args[1]))
	ts.Check(err)
	if got := uint64(info.Mode().Perm()); (got == want) == neg {
		ts.Fatalf("%s has mode %04o; want %s%04o", args[1], got, map[bool]string{true: "not ", false: ""}[neg], want)
	}
}

// cert FILE FIELD VALUE: a field of the first certificate in FILE. Fields:
// cn, eku, ku, ca, email, subject-email, dns, ip, uri, key, o, ou, crl, ocsp.
func cmdCert(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: cert FILE FIELD VALUE")
	}
	data, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	block, _ := pem.Decode(data)
	if block == nil {
		ts.Fatalf("%s: no PEM block", args[0])
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	ts.Check(err)
	got, ok := certField(cert, args[1])
	if !ok {
		ts.Fatalf("unknown field %q", args[1])
	}
	if (got == args[2]) == neg {
		ts.Fatalf("%s: %s = %q; want %s%q", args[0], args[1], got, map[bool]string{true: "not ", false: ""}[neg], args[2])
	}
}

func certField(c *x509.Certificate, field string) (string, bool) {
	switch field {
	case "cn":
		return c.Subject.CommonName, true
	case "o":
		return strings.Join(c.Subject.Organization, ";"), true
	case "ou":
		return strings.Join(c.Subject.OrganizationalUnit, ";"), true
	case "ca":
		return strconv.FormatBool(c.IsCA), true
	case "eku":
		var names []string
		for _, u := range c.ExtKeyUsage {
			names = append(names, map[x509.ExtKeyUsage]string{x509.ExtKeyUsageServerAuth: "serverAuth", x509.ExtKeyUsageClientAuth: "clientAuth"}[u])
		}
		if len(c.UnknownExtKeyUsage) > 0 {
			names = append(names, "unknown")
		}
		return strings.Join(names, ","), true
	case "ku":
		var names []string
		for bit, name := range map[x509.KeyUsage]string{x509.KeyUsageDigitalSignature: "digitalSignature", x509.KeyUsageKeyEncipherment: "keyEncipherment",
			x509.KeyUsageCertSign: "keyCertSign", x509.KeyUsageCRLSign: "cRLSign"} {
			if c.KeyUsage&bit != 0 {
				names = append(names, name)
			}
		}
		sort.Strings(names)
		return strings.Join(names, ","), true
	case "email":
		return strings.Join(c.EmailAddresses, ","), true
	case "subject-email":
		for _, atv := range c.Subject.Names {
			if atv.Type.Equal(asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}) {
				return fmt.Sprint(atv.Value), true
			}
		}
		return "", true
	case "dns":
		return strings.Join(c.DNSNames, ","), true
	case "ip":
		var ips []string
		for _, ip := range c.IPAddresses {
			ips = append(ips, ip.String())
		}
		return strings.Join(ips, ","), true
	case "uri":
		var uris []string
		for _, u := range c.URIs {
			uris = append(uris, u.String())
		}
		return strings.Join(uris, ","), true
	case "key":
		return describePub(c.PublicKey), true
	case "crl":
		return strings.Join(c.CRLDistributionPoints, ","), true
	case "ocsp":
		return strings.Join(c.OCSPServer, ","), true
	case "days":
		return strconv.Itoa(int(c.NotAfter.Sub(c.NotBefore).Hours()/24 + 0.5)), true
	}
	return "", false
}

func describePub(pub crypto.PublicKey) string {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		return "ecdsa-" + strings.ToLower(strings.ReplaceAll(k.Curve.Params().Name, "-", ""))
	case *rsa.PublicKey:
		return "rsa-" + strconv.Itoa(k.N.BitLen())
	}
	return fmt.Sprintf("%T", pub)
}

// named NAME: sets $CERT, $KEY and $CHAIN to the files of the newest
// certificate issued under NAME in $MINICA_DIR.
func cmdNamed(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 || neg {
		ts.Fatalf("usage: named NAME")
	}
	certs := serialCerts(filepath.Join(ts.Getenv("MINICA_DIR"), "certs", args[0], "*.crt"))
	if len(certs) == 0 {
		ts.Fatalf("no certificate named %s", args[0])
	}
	sort.Slice(certs, func(i, j int) bool { return modTime(certs[i]) < modTime(certs[j]) })
	base := strings.TrimSuffix(certs[len(certs)-1], ".crt")
	ts.Setenv("CERT", base+".crt")
	ts.Setenv("KEY", base+".key")
	ts.Setenv("CHAIN", base+".chain.pem")
	ts.Setenv("SERIAL", filepath.Base(base))
}

// serialCerts are the files that pattern matches, less the current.*
// links: the files under their serials.
func serialCerts(pattern string) []string {
	certs, _ := filepath.Glob(pattern)
	return slices.DeleteFunc(certs, func(f string) bool { return strings.HasPrefix(filepath.Base(f), "current.") })
}

func modTime(file string) int64 {
	info, err := os.Stat(file)
	if err != nil {
		return 0
	}
	return info.ModTime().UnixNano()
}

// gencsr FILE KEY CN [-ca] [-eku] [-badsig] [-der] [-dns NAME] [-email ADDR]
// [-cn CN]: writes a CSR; -cn adds another common name after the first. KEY is ecdsa-p256, ecdsa-p224 or rsa-BITS.
func cmdGenCSR(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 3 || neg {
		ts.Fatalf("usage: gencsr FILE KEY CN [options]")
	}
	key := genKey(ts, args[1])
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: args[2]}}
	var badsig, der bool
	for i := 3; i < len(args); i++ {
		switch args[i] {
		case "-ca":
			v, _ := asn1.Marshal(struct{ IsCA bool }{true})
			tmpl.ExtraExtensions = append(tmpl.ExtraExtensions, pkix.Extension{Id: asn1.ObjectIdentifier{2, 5, 29, 19}, Critical: true, Value: v})
		case "-eku":
			v, _ := asn1.Marshal([]asn1.ObjectIdentifier{{1, 3, 6, 1, 5, 5, 7, 3, 1}, {1, 3, 6, 1, 5, 5, 7, 3, 3}})
			tmpl.ExtraExtensions = append(tmpl.ExtraExtensions, pkix.Extension{Id: asn1.ObjectIdentifier{2, 5, 29, 37}, Value: v})
		case "-badsig":
			badsig = true
		case "-der":
			der = true
		case "-dns":
			i++
			tmpl.DNSNames = append(tmpl.DNSNames, args[i])
		case "-ip":
			i++
			tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(args[i]))
		case "-email":
			i++
			tmpl.EmailAddresses = append(tmpl.EmailAddresses, args[i])
		case "-cn":
			i++
			// ExtraNames replaces CommonName when it holds a CN.
			cn := asn1.ObjectIdentifier{2, 5, 4, 3}
			if len(tmpl.Subject.ExtraNames) == 0 {
				tmpl.Subject.ExtraNames = []pkix.AttributeTypeAndValue{{Type: cn, Value: args[2]}}
			}
			tmpl.Subject.ExtraNames = append(tmpl.Subject.ExtraNames, pkix.AttributeTypeAndValue{Type: cn, Value: args[i]})
		default:
			ts.Fatalf("unknown gencsr option %q", args[i])
		}
	}
	out, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	ts.Check(err)
	if badsig {
		out[len(out)-3] ^= 0xff
	}
	if !der {
		out = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: out})
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), out, 0o644))
}

func genKey(ts *testscript.TestScript, kind string) crypto.Signer {
	switch {
	case kind == "ecdsa-p256":
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		ts.Check(err)
		return k
	case kind == "ecdsa-p224":
		k, err := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
		ts.Check(err)
		return k
	case strings.HasPrefix(kind, "rsa-"):
		bits, err := strconv.Atoi(strings.TrimPrefix(kind, "rsa-"))
		ts.Check(err)
		k, err := rsa.GenerateKey(rand.Reader, bits)
		ts.Check(err)
		return k
	}
	ts.Fatalf("unknown key kind %q", kind)
	return nil
}

// snapshot DIR: remembers a hash of every file (path, mode, content) under
// DIR; unchanged DIR fails if anything differs since.
func cmdSnapshot(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 || neg {
		ts.Fatalf("usage: snapshot DIR")
	}
	ts.Setenv("SNAPSHOT_"+hashKey(args[0]), treeHash(ts, ts.MkAbs(args[0])))
}

func cmdUnchanged(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 || neg {
		ts.Fatalf("usage: unchanged DIR")
	}
	want := ts.Getenv("SNAPSHOT_" + hashKey(args[0]))
	if want == "" {
		ts.Fatalf("no snapshot of %s", args[0])
	}
	if got := treeHash(ts, ts.MkAbs(args[0])); got != want {
		ts.Fatalf("%s changed since its snapshot", args[0])
	}
}

func hashKey(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

func treeHash(ts *testscript.TestScript, root string) string {
	h, err := hashTree(root)
	ts.Check(err)
	return h
}

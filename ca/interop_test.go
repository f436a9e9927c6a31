package ca

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"minica/internal/certlint"
)

// TestProfilesAgainstOpenSSLAndZlint issues both profiles for every key type
// under a CA of every key type, and checks each certificate with
// `openssl verify -purpose` (the right purpose passes, the wrong one fails)
// and with zlint.
func TestProfilesAgainstOpenSSLAndZlint(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Fatal("openssl is required (Debian package openssl)")
	}
	for _, caType := range []KeyType{ECDSAP256, RSA2048, Ed25519} {
		c, signer := newTestCA(t, InitOptions{KeyType: caType})
		certlint.Certificate(t, c.Cert.Raw)
		caFile := c.CertFile()
		for _, kt := range KeyTypes {
			if testing.Short() && kt == RSA4096 {
				continue
			}
			for _, p := range []Profile{Server, Client} {
				name := strings.ReplaceAll(string(caType)+"-"+string(kt)+"-"+string(p), "_", "-")
				t.Run(name, func(t *testing.T) {
					req := Request{Name: name, Profile: p, KeyType: kt, DNSNames: []string{"host.example.com"}}
					if p == Client {
						req = Request{Name: name, Profile: p, KeyType: kt, Emails: []string{"user@example.com"}, EmailInSubject: true}
					}
					is, err := c.Issue(signer, req)
					if err != nil {
						t.Fatalf("Issue: %v", err)
					}
					certlint.Certificate(t, is.Cert.Raw)
					checkProfile(t, is.Cert, p, kt)
					right, wrong := "sslserver", "sslclient"
					if p == Client {
						right, wrong = wrong, right
					}
					opensslVerify(t, openssl, caFile, is.CertFile, right, true)
					opensslVerify(t, openssl, caFile, is.CertFile, wrong, false)
				})
			}
		}
	}
}

// TestConstrainedProfilesAgainstOpenSSL issues both profiles for every key
// type under a name-constrained CA and checks that `openssl verify -purpose`
// accepts each: OpenSSL checks the subject's emailAddress against the
// constraints and refuses one that is not an IA5String (error 53), which
// nginx, Apache and HAProxy report as a failed client certificate.
func TestConstrainedProfilesAgainstOpenSSL(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Fatal("openssl is required (Debian package openssl)")
	}
	c, signer := newTestCA(t, InitOptions{PermittedDNS: []string{"example.com"}, PermittedEmails: []string{"example.com"}})
	for _, kt := range KeyTypes {
		if testing.Short() && kt == RSA4096 {
			continue
		}
		for _, p := range []Profile{Server, Client} {
			name := strings.ReplaceAll(string(kt)+"-"+string(p), "_", "-")
			t.Run(name, func(t *testing.T) {
				req := Request{Name: name, Profile: p, KeyType: kt, DNSNames: []string{"host.example.com"}}
				purpose := "sslserver"
				if p == Client {
					req = Request{Name: name, Profile: p, KeyType: kt, Emails: []string{"user@example.com"}, EmailInSubject: true}
					purpose = "sslclient"
				}
				is, err := c.Issue(signer, req)
				if err != nil {
					t.Fatalf("Issue: %v", err)
				}
				certlint.Certificate(t, is.Cert.Raw)
				opensslVerify(t, openssl, c.CertFile(), is.CertFile, purpose, true)
			})
		}
	}
}

// TestConstraintsBindHandSignedLeavesInOpenSSL checks that `openssl verify`
// and GnuTLS's `certtool --verify` refuse a leaf signed with the CA key past
// minica's checks when one of its names is of a type the constrained CA does
// not permit: an IP address, an email or a URI under --permit-dns only, a
// DNS name under --permit-email only.
func TestConstraintsBindHandSignedLeavesInOpenSSL(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Fatal("openssl is required (Debian package openssl)")
	}
	certtool, err := exec.LookPath("certtool")
	if err != nil {
		t.Fatal("certtool is required (Debian package gnutls-bin)")
	}
	dir := t.TempDir()
	for j, ca := range handSignedCAs(t) {
		c, signer := newTestCA(t, ca.opts)
		for i, tt := range ca.leaves {
			t.Run(ca.name+"/"+tt.name, func(t *testing.T) {
				leaf := signLeaf(t, c, signer, tt.leaf)
				file := filepath.Join(dir, fmt.Sprintf("leaf%d-%d.pem", j, i))
				if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf.Raw}), 0o644); err != nil {
					t.Fatal(err)
				}
				out, err := exec.Command(openssl, "verify", "-CAfile", c.CertFile(), "-attime", fmt.Sprint(leaf.NotBefore.Unix()), file).CombinedOutput()
				if ok := err == nil; ok != tt.wantOK {
					t.Errorf("openssl verify: ok = %v; want %v\n%s", ok, tt.wantOK, out)
				} else if !tt.wantOK && !strings.Contains(string(out), "subtree violation") {
					t.Errorf("openssl verify refused for another reason than a name constraint:\n%s", out)
				}
				out, err = exec.Command(certtool, "--verify", "--load-ca-certificate", c.CertFile(), "--infile", file).CombinedOutput()
				if ok := err == nil; ok != tt.wantOK {
					t.Errorf("certtool --verify: ok = %v; want %v\n%s", ok, tt.wantOK, out)
				} else if !tt.wantOK && !strings.Contains(string(out), "violates the signer's constraints") {
					t.Errorf("certtool --verify refused for another reason than a name constraint:\n%s", out)
				}
			})
		}
	}
}

// TestIPOnlyServerUnderConstrainedCA checks that OpenSSL and GnuTLS accept
// a server certificate with an IP address only under a constrained CA:
// GnuTLS checks its common name against the DNS constraints.
func TestIPOnlyServerUnderConstrainedCA(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Fatal("openssl is required (Debian package openssl)")
	}
	certtool, err := exec.LookPath("certtool")
	if err != nil {
		t.Fatal("certtool is required (Debian package gnutls-bin)")
	}
	_, tenNet, _ := net.ParseCIDR("10.0.0.0/8")
	for _, tt := range []struct {
		name string
		opts InitOptions
	}{
		{"IP only", InitOptions{PermittedIPs: []*net.IPNet{tenNet}}},
		{"DNS and IP", InitOptions{PermittedDNS: []string{"example.com"}, PermittedIPs: []*net.IPNet{tenNet}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, signer := newTestCA(t, tt.opts)
			for _, name := range []string{"db", "db.internal"} {
				is, err := c.Issue(signer, Request{Name: name, Profile: Server, IPs: []net.IP{net.ParseIP("10.0.0.5")}})
				if err != nil {
					t.Fatal(err)
				}
				opensslVerify(t, openssl, c.CertFile(), is.CertFile, "sslserver", true)
				out, err := exec.Command(certtool, "--verify", "--load-ca-certificate", c.CertFile(), "--infile", is.CertFile).CombinedOutput()
				if err != nil {
					t.Errorf("certtool --verify %s: %v\n%s", name, err, out)
				}
			}
		})
	}
}

func opensslVerify(t *testing.T, openssl, caFile, certFile, purpose string, wantOK bool) {
	t.Helper()
	out, err := exec.Command(openssl, "verify", "-CAfile", caFile, "-purpose", purpose, certFile).CombinedOutput()
	if ok := err == nil; ok != wantOK {
		t.Errorf("openssl verify -purpose %s: ok = %v; want %v\n%s", purpose, ok, wantOK, out)
	}
}

func checkProfile(t *testing.T, cert *x509.Certificate, p Profile, kt KeyType) {
	t.Helper()
	wantEKU := x509.ExtKeyUsageServerAuth
	wantKU := x509.KeyUsageDigitalSignature
	if p == Client {
		wantEKU = x509.ExtKeyUsageClientAuth
	} else if strings.HasPrefix(string(kt), "rsa") {
		wantKU |= x509.KeyUsageKeyEncipherment
	}
	if len(cert.ExtKeyUsage) != 1 || cert.ExtKeyUsage[0] != wantEKU || len(cert.UnknownExtKeyUsage) != 0 {
		t.Errorf("EKU = %v %v; want only %v", cert.ExtKeyUsage, cert.UnknownExtKeyUsage, wantEKU)
	}
	if cert.KeyUsage != wantKU {
		t.Errorf("key usage = %b; want %b", cert.KeyUsage, wantKU)
	}
	if cert.IsCA || !cert.BasicConstraintsValid {
		t.Errorf("basic constraints: IsCA = %v, valid = %v; want CA:FALSE", cert.IsCA, cert.BasicConstraintsValid)
	}
	if len(cert.SubjectKeyId) == 0 || len(cert.AuthorityKeyId) == 0 {
		t.Error("missing subject or authority key identifier")
	}
	if n := cert.SerialNumber.BitLen(); n < 64 || n > 128 {
		t.Errorf("serial has %d bits; want 64 to 128", n)
	}
}

// TestEncryptedKeyReadByOpenSSL checks that openssl pkey decrypts the CA
// key with the same password (PBES2, AES-256).
func TestEncryptedKeyReadByOpenSSL(t *testing.T) {
	c, err := Init(t.TempDir()+"/ca", InitOptions{CommonName: "Enc Root", Password: []byte("correct horse")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	keyFile := c.Path("ca.key")
	pw := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(pw, []byte("correct horse"), 0o600)
	out, err := exec.Command("openssl", "pkey", "-in", keyFile, "-passin", "file:"+pw, "-noout", "-text").CombinedOutput()
	if err != nil {
		t.Fatalf("openssl pkey: %v\n%s", err, out)
	}
	info, err := exec.Command("openssl", "asn1parse", "-in", keyFile).CombinedOutput()
	if err != nil || !strings.Contains(string(info), "PBES2") || !strings.Contains(string(info), "aes-256-cbc") {
		t.Errorf("key is not PBES2/AES-256: %v\n%s", err, info)
	}
	data, _ := os.ReadFile(keyFile)
	if b, _ := pem.Decode(data); b == nil || b.Type != "ENCRYPTED PRIVATE KEY" {
		t.Errorf("key PEM type is not ENCRYPTED PRIVATE KEY")
	}
	if _, err := c.LoadSigner([]byte("wrong")); err == nil || !strings.Contains(err.Error(), "wrong password") {
		t.Errorf("LoadSigner(wrong) = %v; want wrong password", err)
	}
}

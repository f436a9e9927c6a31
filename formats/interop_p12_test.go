//go:build interop

package formats_test

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"minica/formats"
	"minica/internal/testca"
)

// TestP12Interop writes a bundle for each profile and key type and has
// every peer of issue point 9 read it: the key and the full chain.
func TestP12Interop(t *testing.T) {
	for _, tool := range []string{"openssl", "pk12util", "certutil", "java", "keytool", "certtool", "curl"} {
		requireTool(t, tool)
	}
	ca := testca.New(t, "Interop Test Root")
	server := newMTLSServer(t, ca)
	for _, id := range clientIdentities(t, ca) {
		for _, profile := range []formats.P12Profile{formats.P12Modern, formats.P12Compat} {
			t.Run(profile.String()+"/"+id.name, func(t *testing.T) {
				password, err := formats.GeneratePassword()
				if err != nil {
					t.Fatal(err)
				}
				// A name unlike the CN, to see where peers take it from.
				name := "bundle-" + strings.ToLower(id.name)
				data, err := formats.P12Encoder{Profile: profile, Name: name}.Encode(id.key, id.leaf, id.chain, password)
				if err != nil {
					t.Fatal(err)
				}
				if err := formats.CheckP12(data, password, id.key, id.leaf); err != nil {
					t.Fatal(err)
				}
				dir := t.TempDir()
				p12 := writeFile(t, dir, "bundle.p12", data)
				pwFile := writeFile(t, dir, "password.txt", []byte(password+"\n"))

				t.Run("openssl", func(t *testing.T) { opensslReadsP12(t, p12, pwFile, profile, id) })
				t.Run("nss", func(t *testing.T) { nssImportsP12(t, p12, pwFile, name, id) })
				t.Run("java", func(t *testing.T) { javaLoadsP12(t, p12, pwFile, id) })
				t.Run("keytool", func(t *testing.T) { keytoolListsP12(t, p12, password, name) })
				t.Run("gnutls", func(t *testing.T) { gnutlsReadsP12(t, p12, password) })
				t.Run("curl", func(t *testing.T) { curlPresentsP12(t, server, ca, p12, password, id) })
			})
		}
	}
}

// opensslReadsP12 runs OpenSSL 3 without -legacy, checks the MAC it
// reports, and compares the key and certificates it extracts.
func opensslReadsP12(t *testing.T, p12, pwFile string, profile formats.P12Profile, id interopIdentity) {
	info := run(t, "openssl", "pkcs12", "-info", "-noout", "-in", p12, "-passin", "file:"+pwFile)
	wantMAC := map[formats.P12Profile]string{formats.P12Modern: "MAC: sha256", formats.P12Compat: "MAC: sha1"}[profile]
	if !strings.Contains(info, wantMAC) {
		t.Errorf("openssl pkcs12 -info does not report %q:\n%s", wantMAC, info)
	}
	// docs/formats.md quotes what openssl reports of each profile.
	doc, err := os.ReadFile(filepath.Join("..", "docs", "formats.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if strings.HasPrefix(line, "MAC:") || strings.Contains(line, "Iteration") {
			if !strings.Contains(string(doc), "    "+line+"\n") {
				t.Errorf("docs/formats.md does not quote openssl pkcs12 -info's line %q for %s", line, profile)
			}
		}
	}
	out := run(t, "openssl", "pkcs12", "-in", p12, "-passin", "file:"+pwFile, "-nodes")
	obj, err := formats.Detect([]byte(out))
	if err != nil {
		t.Fatalf("reading openssl's PEM output: %v", err)
	}
	if obj.Kind != formats.KindBundle || len(obj.Certificates) != 2 {
		t.Fatalf("openssl extracted %s; want a key and 2 certificates", obj)
	}
	if !obj.Certificates[0].Equal(id.leaf) || !obj.Certificates[1].Equal(id.chain[0]) {
		t.Errorf("openssl extracted other certificates")
	}
	if err := formats.KeyMatchesCertificate(obj.Key.Signer, id.leaf); err != nil {
		t.Errorf("openssl extracted a key: %v", err)
	}
}

// nssImportsP12 imports into a fresh NSS database, then lists the key and
// the certificates.
func nssImportsP12(t *testing.T, p12, pwFile, name string, id interopIdentity) {
	if list := run(t, "pk12util", "-l", p12, "-w", pwFile); !strings.Contains(list, "Friendly Name: "+name+"\n") {
		t.Errorf("pk12util -l does not show the friendly name %q:\n%s", name, list)
	}
	db := "sql:" + t.TempDir()
	run(t, "certutil", "-N", "-d", db, "--empty-password")
	run(t, "pk12util", "-i", p12, "-d", db, "-w", pwFile)
	keys := run(t, "certutil", "-K", "-d", db)
	wantAlg := map[string]string{"ECDSA-P256": "ec", "RSA-2048": "rsa"}[id.name]
	if !regexp.MustCompile(`<\s*0>\s+` + wantAlg + `\s+[0-9a-f]{40}\s+\S`).MatchString(keys) {
		t.Errorf("certutil -K does not list one %s key:\n%s", wantAlg, keys)
	}
	certs := run(t, "certutil", "-L", "-d", db)
	// The leaf's nickname is the key's friendlyName, not its CN.
	if !regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(name)+`\s+u,u,u$`).MatchString(certs) || !strings.Contains(certs, id.chain[0].Subject.CommonName) {
		t.Errorf("certutil -L does not list the leaf as %q and the CA:\n%s", name, certs)
	}
}

// keytoolListsP12 has keytool list the bundle: one key entry, whose alias
// is the name, not "1".
func keytoolListsP12(t *testing.T, p12, password, name string) {
	out := run(t, "keytool", "-list", "-keystore", p12, "-storetype", "PKCS12", "-storepass", password)
	if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `, .*PrivateKeyEntry`).MatchString(out) {
		t.Errorf("keytool -list does not show the alias %q:\n%s", name, out)
	}
}

// javaLoadsP12 loads the KeyStore and reads the key and its chain.
func javaLoadsP12(t *testing.T, p12, pwFile string, id interopIdentity) {
	out := run(t, "java", filepath.Join("testdata", "interop", "LoadP12.java"), p12, pwFile)
	wantAlg := map[string]string{"ECDSA-P256": "EC", "RSA-2048": "RSA"}[id.name]
	if want := fmt.Sprintf("key %s chain 2", wantAlg); !strings.Contains(out, want) {
		t.Errorf("java printed %q; want %q", out, want)
	}
}

// gnutlsReadsP12 has certtool decrypt and print every bag.
func gnutlsReadsP12(t *testing.T, p12, password string) {
	out := run(t, "certtool", "--p12-info", "--inder", "--infile", p12, "--password", password)
	if n := strings.Count(out, "-----BEGIN CERTIFICATE-----"); n != 2 {
		t.Errorf("certtool printed %d certificates; want 2:\n%s", n, out)
	}
	if !strings.Contains(out, "PRIVATE KEY-----") {
		t.Errorf("certtool printed no private key:\n%s", out)
	}
}

// curlPresentsP12 makes curl present the bundle to a Go server on
// 127.0.0.1 that requires a client certificate from ca.
func curlPresentsP12(t *testing.T, server *httptest.Server, ca *testca.CA, p12, password string, id interopIdentity) {
	caFile := writeFile(t, t.TempDir(), "ca.pem", ca.PEM())
	out := run(t, "curl", "--silent", "--show-error", "--max-time", "30",
		"--cacert", caFile, "--cert-type", "P12", "--cert", p12+":"+password,
		"--write-out", "\n%{http_code}", server.URL+"/")
	if want := "hello " + id.leaf.Subject.CommonName + "\n200"; out != want {
		t.Errorf("curl output %q; want %q", out, want)
	}
}

// newMTLSServer serves "hello CN" to clients with a certificate from ca.
func newMTLSServer(t *testing.T, ca *testca.CA) *httptest.Server {
	t.Helper()
	cert, key := ca.Server(t, "localhost")
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s", r.TLS.PeerCertificates[0].Subject.CommonName)
	}))
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{cert.Raw}, PrivateKey: key, Leaf: cert}},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		MinVersion:   tls.VersionTLS12,
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

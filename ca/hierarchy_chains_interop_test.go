//go:build interop

package ca

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minica/revoke"
)

// TestHierarchyChainsInGoOpenSSLGnuTLS has Go's verifier, OpenSSL (with the
// CRL of every CA, -crl_check_all) and GnuTLS (`certtool --verify` with the
// CRLs of both levels) verify the chains minica writes: a leaf of every key
// type and profile under an intermediate with name constraints and under one
// without, the root the only trust anchor, the leaf's chain file (leaf and
// intermediate) the certificates sent. Once the root revokes an intermediate,
// all three refuse its leaves; the leaves of the other still pass. The CAs
// are made at the real time, since certtool verifies at the current time.
func TestHierarchyChainsInGoOpenSSLGnuTLS(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Fatal("openssl is required (Debian package openssl)")
	}
	certtool, err := exec.LookPath("certtool")
	if err != nil {
		t.Fatal("certtool is required (Debian package gnutls-bin)")
	}
	now := time.Now().Truncate(time.Second)
	clock := fixedClock(now)
	root, err := Init(filepath.Join(t.TempDir(), "root"), InitOptions{Root: true, CommonName: "Chains Root", Now: clock, FirstCRL: true})
	if err != nil {
		t.Fatalf("Init(root): %v", err)
	}
	t.Cleanup(func() { root.Close() })
	rootSigner := signerOf(t, root)
	constrained := Constraints{PermittedDNS: []string{"example.com"}, PermittedEmails: []string{"example.com"}}
	makeInter := func(name string, k Constraints) *CA {
		p := newPending(t, "Chains "+name, k)
		is, err := root.SignIntermediate(rootSigner, IntermediateRequest{Name: name, CSR: p.CSR, Constraints: k, Validity: 365 * 24 * time.Hour})
		if err != nil {
			t.Fatalf("SignIntermediate(%s): %v", name, err)
		}
		inter, err := ImportIntermediate(p.Dir, ImportOptions{Certs: []*x509.Certificate{is.Cert, root.Cert}, RootCRL: rootCRL(t, root), Now: clock})
		if err != nil {
			t.Fatalf("ImportIntermediate(%s): %v", name, err)
		}
		inter.Now = clock
		t.Cleanup(func() { inter.Close() })
		if _, err := inter.PublishCRL(signerOf(t, inter), 0); err != nil {
			t.Fatal(err)
		}
		return inter
	}
	inters := map[string]*CA{"constrained": makeInter("constrained", constrained), "open": makeInter("open", Constraints{})}
	pool := x509.NewCertPool()
	pool.AddCert(root.Cert)

	type leaf struct {
		inter *CA
		is    *Issued
		eku   x509.ExtKeyUsage
		oid   string
	}
	var leaves []leaf
	for _, iname := range []string{"constrained", "open"} {
		inter := inters[iname]
		signer := signerOf(t, inter)
		for _, kt := range KeyTypes {
			for _, p := range []Profile{Server, Client} {
				name := iname + "-" + string(kt) + "-" + string(p)
				req := Request{Name: name, Profile: p, KeyType: kt, DNSNames: []string{name + ".example.com"}, Validity: 30 * 24 * time.Hour}
				l := leaf{inter: inter, eku: x509.ExtKeyUsageServerAuth, oid: "1.3.6.1.5.5.7.3.1"}
				if p == Client {
					req = Request{Name: name, Profile: p, KeyType: kt, Emails: []string{"user@example.com"}, EmailInSubject: true, Validity: 30 * 24 * time.Hour}
					l.eku, l.oid = x509.ExtKeyUsageClientAuth, "1.3.6.1.5.5.7.3.2"
				}
				if l.is, err = inter.Issue(signer, req); err != nil {
					t.Fatalf("Issue(%s): %v", name, err)
				}
				leaves = append(leaves, l)
			}
		}
	}
	// verifyAll runs the three verifiers on l and returns their errors.
	verifyAll := func(t *testing.T, l leaf) map[string]error {
		errs := map[string]error{}
		chain := readCerts(t, l.is.ChainFile)
		if len(chain) != 2 || !chain[0].Equal(l.is.Cert) || !chain[1].Equal(l.inter.Cert) {
			t.Fatalf("chain file %s holds %d certificates; want the leaf and the intermediate", l.is.ChainFile, len(chain))
		}
		im := x509.NewCertPool()
		im.AddCert(chain[1])
		if _, err := l.is.Cert.Verify(x509.VerifyOptions{Roots: pool, Intermediates: im, CurrentTime: now.Add(time.Minute), KeyUsages: []x509.ExtKeyUsage{l.eku}}); err != nil {
			errs["go"] = err
		}
		if out, err := exec.Command(openssl, "verify", "-crl_check_all", "-CAfile", root.CertFile(), "-untrusted", l.is.ChainFile,
			"-CRLfile", root.Path(CRLPEMFile), "-CRLfile", l.inter.Path(CRLPEMFile), l.is.CertFile).CombinedOutput(); err != nil {
			errs["openssl"] = &peerError{err, string(out)}
		}
		if out, err := exec.Command(certtool, "--verify", "--load-ca-certificate", root.CertFile(),
			"--load-crl", l.inter.Path(CRLChainFile), "--verify-purpose", l.oid, "--infile", l.is.ChainFile).CombinedOutput(); err != nil {
			errs["gnutls"] = &peerError{err, string(out)}
		}
		return errs
	}
	for _, l := range leaves {
		t.Run(l.is.Record.Name, func(t *testing.T) {
			for peer, err := range verifyAll(t, l) {
				t.Errorf("%s refuses the chain: %v", peer, err)
			}
		})
	}

	// The root revokes the open intermediate; the intermediate's
	// crl-chain.pem takes the new root CRL as an issuing host would.
	rec, err := root.RecordsByName("open")
	if err != nil || len(rec) != 1 {
		t.Fatalf("the root's record of open: %v (%d)", err, len(rec))
	}
	if _, err := root.RevokeRecord(rec[0], revoke.CACompromise); err != nil {
		t.Fatal(err)
	}
	if _, err := root.PublishCRL(rootSigner, 0); err != nil {
		t.Fatal(err)
	}
	for _, inter := range inters {
		if _, err := inter.ImportRootCRL(rootCRL(t, root)); err != nil {
			t.Fatalf("ImportRootCRL: %v", err)
		}
	}
	for _, l := range leaves {
		t.Run("after-revocation/"+l.is.Record.Name, func(t *testing.T) {
			errs := verifyAll(t, l)
			if l.inter == inters["constrained"] {
				for peer, err := range errs {
					t.Errorf("%s refuses a leaf of the intermediate still in service: %v", peer, err)
				}
				return
			}
			// Go's verifier knows no CRLs: that is minica verify's part
			// (TestHierarchyRevocation and hierarchy_revoke.txtar).
			for _, peer := range []string{"openssl", "gnutls"} {
				err, ok := errs[peer]
				switch {
				case !ok:
					t.Errorf("%s accepts a leaf of a revoked intermediate", peer)
				case !strings.Contains(strings.ToLower(err.Error()), "revoked"):
					t.Errorf("%s refuses for another reason than the revocation: %v", peer, err)
				}
			}
		})
	}
}

type peerError struct {
	err error
	out string
}

func (e *peerError) Error() string { return e.err.Error() + "\n" + e.out }

func readCerts(t *testing.T, file string) []*x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var certs []*x509.Certificate
	for {
		var b *pem.Block
		if b, data = pem.Decode(data); b == nil {
			return certs
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		certs = append(certs, c)
	}
}

//go:build interop

package servertest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hierPKI is a root with two intermediates, as minica's commands make them
// on one machine (--parent): int1 issues the server certificate and the
// clients alice and bob (bob revoked at int1), int2 the client sam, the
// overlap of a rotation. Clients present their chain files (leaf and
// intermediate), as relying parties hold only the root.
type hierPKI struct {
	root, int1, int2 string
	alice, bob, sam  client
	// crls is the CRL file of the servers during the overlap: int1's
	// crl-chain.pem (int1 and the root) followed by int2's crl.pem.
	crls string
	// bundle is the proxy's CA bundle: the root and both intermediates.
	bundle string
}

func newHierPKI(t *testing.T) *hierPKI {
	t.Helper()
	dir := t.TempDir()
	h := &hierPKI{root: filepath.Join(dir, "root"), int1: filepath.Join(dir, "int1"), int2: filepath.Join(dir, "int2"),
		crls: filepath.Join(dir, "crls.pem"), bundle: filepath.Join(dir, "bundle.pem")}
	minica(t, h.root, "init", "--root", "--cn", "Interop Root", "--no-password")
	minica(t, h.int1, "init", "--intermediate", "--cn", "Interop Issuing 1", "--no-password", "--parent", h.root)
	minica(t, h.int2, "init", "--intermediate", "--cn", "Interop Issuing 2", "--no-password", "--parent", h.root)
	minica(t, h.int1, "issue", "server", "web", "--dns", "localhost", "--ip", "127.0.0.1")
	h.alice = chainClient(issueClient(t, h.int1, "alice", "alice@example.com"))
	h.bob = chainClient(issueClient(t, h.int1, "bob", "bob@example.com"))
	h.sam = chainClient(issueClient(t, h.int2, "sam", "sam@example.com"))
	minica(t, h.int1, "revoke", "bob", "--reason", "keyCompromise")
	h.writeCRLs(t)
	cat(t, h.bundle, filepath.Join(h.root, "ca.crt"), filepath.Join(h.int1, "ca.crt"), filepath.Join(h.int2, "ca.crt"))
	return h
}

// chainClient presents c's chain file (leaf and intermediate).
func chainClient(c client) client {
	c.cert = strings.TrimSuffix(c.cert, ".crt") + ".chain.pem"
	return c
}

// writeCRLs rewrites the overlap's CRL file from the CA directories.
func (h *hierPKI) writeCRLs(t *testing.T) {
	t.Helper()
	cat(t, h.crls, filepath.Join(h.int1, "crl-chain.pem"), filepath.Join(h.int2, "crl.pem"))
}

// revokeInt1 revokes int1 at the root (cACompromise), publishes the root's
// CRL and imports it on both issuing hosts, as docs/hierarchy.md says.
func (h *hierPKI) revokeInt1(t *testing.T) {
	t.Helper()
	minica(t, h.root, "revoke", "int1", "--reason", "cACompromise")
	rootCRL := filepath.Join(filepath.Dir(h.root), "root.crl")
	minica(t, h.root, "crl", "--out", rootCRL)
	minica(t, h.int1, "crl", "import-root", rootCRL)
	minica(t, h.int2, "crl", "import-root", rootCRL)
	h.writeCRLs(t)
}

func cat(t *testing.T, out string, files ...string) {
	t.Helper()
	var b []byte
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, data...)
	}
	writeFile(t, out, string(b))
}

// TestHierarchyRevocationInServers proves revocation at both levels, and
// the overlap of a rotation, in every verifier of a client certificate:
// nginx, Apache and HAProxy running the configuration `minica config`
// prints for the intermediate, `minica proxy`, `openssl verify
// -crl_check_all` and `minica verify`, each in two set-ups:
//
//   - as generated on int1's host: its chain and crl-chain.pem (int1's CRL
//     and the root's). alice passes, bob (revoked at int1) is refused, and
//     so is sam (int2), whose intermediate has no CRL there: no CA of a
//     path goes unchecked;
//   - the overlap of a rotation: the same with --crl-file naming a file
//     with the CRLs of both intermediates and of the root (for the proxy,
//     --ca with the root and both intermediates): alice and sam pass.
//
// Then the root revokes int1 (cACompromise) and both hosts import its new
// CRL: alice is refused everywhere, sam still passes in the overlap.
func TestHierarchyRevocationInServers(t *testing.T) {
	curl := need(t, "curl", "curl")
	openssl := need(t, "openssl", "openssl")
	h := newHierPKI(t)
	up := newUpstream(t)
	// curl trusts int1's chain for the servers' certificate (HAProxy sends
	// the leaf alone).
	serverCA := filepath.Join(h.int1, "chain.pem")
	rootCert := filepath.Join(h.root, "ca.crt")

	type verifier struct {
		name    string
		overlap bool // set up for the overlap, else as generated on int1
		passes  func(c client) (bool, string)
		reload  func(t *testing.T)
	}
	var verifiers []verifier
	curlPasses := func(port string) func(c client) (bool, string) {
		return func(c client) (bool, string) {
			r := get(t, curl, serverCA, port, c)
			return !refused(r), r.status + " " + r.detail
		}
	}
	for _, overlap := range []bool{false, true} {
		crlFile := filepath.Join(h.int1, "crl-chain.pem")
		if overlap {
			crlFile = h.crls
		}
		for _, fe := range []frontEnd{nginxFrontEnd(t), apacheFrontEnd(t), haproxyFrontEnd(t)} {
			port, dir := freePort(t), t.TempDir()
			args := []string{"config", fe.name, "--server-cert", "web", "--upstream", up.url, "--listen", "127.0.0.1:" + port}
			if overlap {
				args = append(args, "--crl-file", h.crls)
			}
			conf := minica(t, h.int1, args...)
			if !strings.Contains(conf, crlFile) {
				t.Fatalf("minica config %s: the CRL file %s is not named:\n%s", fe.name, crlFile, conf)
			}
			generated := filepath.Join(dir, "generated.conf")
			writeFile(t, generated, conf)
			s := fe.start(t, dir, generated, port)
			verifiers = append(verifiers, verifier{name: fe.name, overlap: overlap, passes: curlPasses(port),
				reload: func(t *testing.T) { fe.reload(t, dir, s, crlFile) }})
		}
		port := freePort(t)
		args := []string{"--dir", h.int1, "proxy", "--listen", "127.0.0.1:" + port, "--upstream", up.url,
			"--server-cert", "web", "--reload-interval", "0"}
		if overlap {
			args = append(args, "--ca", h.bundle, "--crl", h.crls)
		}
		proxy := start(t, port, minicaBin, args...)
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("minica %s:\n%s", strings.Join(args, " "), proxy.output())
			}
		})
		verifiers = append(verifiers,
			verifier{name: "minica proxy", overlap: overlap, passes: curlPasses(port),
				reload: func(t *testing.T) { proxy.cmd.Process.Signal(syscall.SIGHUP) }},
			verifier{name: "openssl verify -crl_check_all", overlap: overlap, passes: func(c client) (bool, string) {
				out, err := exec.Command(openssl, "verify", "-crl_check_all", "-purpose", "sslclient",
					"-CAfile", rootCert, "-untrusted", c.cert, "-CRLfile", crlFile, c.cert).CombinedOutput()
				return err == nil, string(out)
			}},
		)
	}
	verifiers = append(verifiers,
		verifier{name: "minica verify --trust", overlap: true, passes: func(c client) (bool, string) {
			out, err := exec.Command(minicaBin, "verify", "--trust", rootCert, "--untrusted", h.bundle, "--crl", h.crls, c.cert).CombinedOutput()
			return err == nil, string(out)
		}},
		verifier{name: "minica verify on the issuing host", overlap: true, passes: func(c client) (bool, string) {
			dir := h.int1
			if c == h.sam {
				dir = h.int2
			}
			out, err := exec.Command(minicaBin, "--dir", dir, "verify", c.serial).CombinedOutput()
			return err == nil, string(out)
		}},
	)

	clients := []struct {
		name string
		c    client
	}{{"alice", h.alice}, {"bob", h.bob}, {"sam", h.sam}}
	check := func(t *testing.T, want map[string]bool) {
		for _, v := range verifiers {
			for _, cl := range clients {
				wantOK := want[cl.name] && (v.overlap || cl.name != "sam")
				// A reload replaces a server's workers gracefully: until
				// the old ones stop accepting, some connections still reach
				// them. Wait, a bounded time, for three verdicts in a row.
				deadline := time.Now().Add(waitLimit)
				var ok bool
				var detail string
				for inARow := 0; inARow < 3 && time.Now().Before(deadline); {
					ok, detail = v.passes(cl.c)
					inARow++
					if ok != wantOK {
						inARow = 0
						time.Sleep(200 * time.Millisecond)
					}
				}
				if ok != wantOK {
					what := "as generated"
					if v.overlap {
						what = "overlap"
					}
					t.Errorf("%s (%s): %s passes = %v; want %v\n%s", v.name, what, cl.name, ok, wantOK, detail)
				}
			}
		}
	}
	t.Run("bob revoked at int1", func(t *testing.T) {
		check(t, map[string]bool{"alice": true, "sam": true})
	})
	t.Run("int1 revoked at the root", func(t *testing.T) {
		h.revokeInt1(t)
		for _, v := range verifiers {
			if v.reload != nil {
				v.reload(t)
			}
		}
		check(t, map[string]bool{"sam": true})
	})
}

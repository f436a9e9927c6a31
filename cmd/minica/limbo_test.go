package main

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// limboFull, when set, is the path of a whole x509-limbo suite (limbo.json):
// TestLimbo then selects from it the cases that fit a client-certificate CA
// and rewrites testdata/x509-limbo/limbo.json and its selection summary.
var limboFull = flag.String("limbo-vendor", "", "select the x509-limbo cases of this limbo.json into testdata/x509-limbo")

// limboCase is one x509-limbo testcase, the fields of its schema
// (limbo-schema.json, version 1) that the selection and the run read.
type limboCase struct {
	ID                    string          `json:"id"`
	ConflictsWith         []string        `json:"conflicts_with"`
	Features              []string        `json:"features"`
	Importance            string          `json:"importance"`
	Description           string          `json:"description"`
	ValidationKind        string          `json:"validation_kind"`
	TrustedCerts          []string        `json:"trusted_certs"`
	UntrustedIntermediate []string        `json:"untrusted_intermediates"`
	PeerCertificate       string          `json:"peer_certificate"`
	ValidationTime        *time.Time      `json:"validation_time"`
	SignatureAlgorithms   []string        `json:"signature_algorithms"`
	KeyUsage              []string        `json:"key_usage"`
	ExtendedKeyUsage      []string        `json:"extended_key_usage"`
	ExpectedResult        string          `json:"expected_result"`
	ExpectedPeerName      *limboPeerName  `json:"expected_peer_name"`
	ExpectedPeerNames     []limboPeerName `json:"expected_peer_names"`
	MaxChainDepth         *int            `json:"max_chain_depth"`
	CRLs                  []string        `json:"crls"`
}

type limboPeerName struct {
	Kind  string `json:"kind"`
	Value string `json:"value"`
}

type limboSuite struct {
	Version   int         `json:"version"`
	Testcases []limboCase `json:"testcases"`
}

// limboSkip is the rule that leaves a case out of the run, with its reason,
// or "" for a case that fits a client-certificate CA: chain building, path
// length, name constraints, validity, key usage and EKU, CRLs.
func limboSkip(tc limboCase) string {
	switch {
	case strings.HasPrefix(tc.ID, "webpki::"):
		return "webpki: the Web PKI profile (CA/Browser Forum rules on names, keys and EKUs), not a private client-certificate CA's"
	case slices.ContainsFunc(tc.Features, func(f string) bool { return strings.HasPrefix(f, "pedantic-") }):
		return "pedantic: strictness the suite itself marks as beyond what verifiers are expected to enforce"
	case slices.Contains(tc.Features, "rfc5280-incompatible-with-webpki"):
		return "contested: a verdict the suite marks as conflicting between RFC 5280 and the Web PKI, whose side Go's verifier takes"
	case slices.ContainsFunc(tc.Features, func(f string) bool { return strings.Contains(f, "polic") }):
		return "certificate policies: minica issues and judges none"
	case tc.MaxChainDepth != nil || slices.Contains(tc.Features, "max-chain-depth"):
		return "harness option: a chain-depth limit, which minica verify has no flag for"
	case len(tc.SignatureAlgorithms) > 0 || len(tc.KeyUsage) > 0:
		return "harness option: a restriction of signature algorithms or key usages, which minica verify has no flag for"
	case limboPurpose(tc) == "":
		return "purpose: an extended key usage other than clientAuth or serverAuth"
	case tc.ExpectedResult == "FAILURE" && !limboNameMatches(tc):
		return "server-name-validation: the refusal rests on the peer's name, which minica verify (a client-certificate judge) does not match"
	}
	return ""
}

// limboPurpose is the --purpose a case is run with, "" if none fits.
func limboPurpose(tc limboCase) string {
	switch {
	case len(tc.ExtendedKeyUsage) == 0 && tc.ValidationKind == "CLIENT":
		return "client"
	case len(tc.ExtendedKeyUsage) == 0 && tc.ValidationKind == "SERVER":
		return "server"
	case slices.Equal(tc.ExtendedKeyUsage, []string{"clientAuth"}):
		return "client"
	case slices.Equal(tc.ExtendedKeyUsage, []string{"serverAuth"}):
		return "server"
	}
	return ""
}

// limboNameMatches reports whether the peer certificate carries the name the
// case expects (or it cannot tell: no name expected, or a certificate that
// does not parse), so that a refusal is not about the name.
func limboNameMatches(tc limboCase) bool {
	block, _ := pem.Decode([]byte(tc.PeerCertificate))
	if block == nil {
		return true
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return true
	}
	names := tc.ExpectedPeerNames
	if tc.ExpectedPeerName != nil {
		names = append(names, *tc.ExpectedPeerName)
	}
	for _, n := range names {
		switch n.Kind {
		case "DNS", "IP":
			if cert.VerifyHostname(n.Value) != nil {
				return false
			}
		case "RFC822":
			if !slices.Contains(cert.EmailAddresses, n.Value) {
				return false
			}
		}
	}
	return true
}

// The reasons of limboExpected. minica builds and checks paths with Go's
// crypto/x509 (as its TLS stack does in the proxy) and adds its own rules
// in revoke.Judge; the differences fall into these kinds.
const (
	limboCANotClient = "minica never takes a CA certificate (basicConstraints CA:TRUE) for a client or server, " +
		"whatever its EKU (reason ca-certificate): it refuses, never accepts too much"
	limboGoClosed = "Go's crypto/x509 refuses this valid path (it fails closed, never open): "
	limboGoIssuer = "Go's crypto/x509 does not enforce this rule on issuers, which widens no CA's power " +
		"(minica's own certificates follow it, checked by zlint): "
)

// limboExpected are the cases where minica verify's verdict differs from the
// suite's, each with the reason; the test fails on any other difference and
// on a listed case that stops differing. docs/security.md lists them too.
var limboExpected = map[string]string{
	"rfc5280::eku::ee-without-eku": "minica requires an extended key usage on every leaf (reason no-eku): " +
		"Go's TLS server would accept a client certificate with none",
	"rfc5280::ca-as-leaf":                         limboCANotClient,
	"pathlen::validation-ignores-pathlen-in-leaf": limboCANotClient,
	"pathlen::self-issued-certs-pathlen": limboGoClosed + "it counts self-issued intermediates against " +
		"pathLenConstraint, which RFC 5280 section 6.1.4 (l) exempts",
	"rfc5280::nc::permitted-self-issued": limboGoClosed + "it applies name constraints to a self-issued " +
		"intermediate, which RFC 5280 section 6.1.4 (b) exempts",
	"rfc5280::nc::permitted-dn-match":        limboGoClosed + "it refuses critical directoryName constraints, which it does not enforce",
	"rfc5280::nc::nc-forbids-othername-noop": limboGoClosed + "it refuses critical otherName constraints, which it does not enforce",
	"pathological::nc-dos-1": "denial-of-service vector the suite expects a verifier to give up on; Go's bounds its " +
		"name-constraint work and, every name being inside the constraints, accepts it (in milliseconds)",
	"pathological::nc-dos-2": "denial-of-service vector the suite expects a verifier to give up on; Go's bounds its " +
		"name-constraint work and, every name being inside the constraints, accepts it (in milliseconds)",
	"rfc5280::aki::leaf-missing-aki":         limboGoIssuer + "an authority key identifier in every certificate (RFC 5280 4.2.1.1)",
	"rfc5280::aki::intermediate-missing-aki": limboGoIssuer + "an authority key identifier in every certificate (RFC 5280 4.2.1.1)",
	"rfc5280::ski::root-missing-ski":         limboGoIssuer + "a subject key identifier in every CA certificate (RFC 5280 4.2.1.2)",
	"rfc5280::ski::intermediate-missing-ski": limboGoIssuer + "a subject key identifier in every CA certificate (RFC 5280 4.2.1.2)",
	"rfc5280::nc::invalid-dnsname-leading-period": limboGoIssuer + "no leading period in a DNS name constraint " +
		"(Go, like OpenSSL, reads it as the subdomains)",
	"rfc5280::nc::not-allowed-in-ee-noncritical": limboGoIssuer + "name constraints only in CA certificates " +
		"(in a leaf they constrain nothing)",
	"rfc5280::nc::not-allowed-in-ee-critical": limboGoIssuer + "name constraints only in CA certificates " +
		"(in a leaf they constrain nothing)",
	"rfc5280::san::noncritical-with-empty-subject": limboGoIssuer + "a critical SAN when the subject is empty (RFC 5280 4.2.1.6)",
	"rfc5280::san::underscore-dns":                 limboGoIssuer + "DNS names in preferred name syntax (no underscore)",
	"rfc5280::ca-empty-subject":                    limboGoIssuer + "a non-empty subject in CA certificates (RFC 5280 4.1.2.6)",
	"rfc5280::root-non-critical-basic-constraints": limboGoIssuer + "a critical basicConstraints in CA certificates (RFC 5280 4.2.1.9)",
	"rfc5280::root-inconsistent-ca-extensions":     limboGoIssuer + "keyCertSign in the key usage of a CA certificate that has one (RFC 5280 4.2.1.3)",
}

// limboDir is where the selected vectors live, with the suite's licence.
const limboDir = "testdata/x509-limbo"

// TestLimbo runs the x509-limbo cases that fit a client-certificate CA
// through `minica verify --trust` (in-process) and compares each verdict
// with the suite's expected result; it logs the counts of passes, expected
// failures and, from the selection, the skips by rule.
func TestLimbo(t *testing.T) {
	t.Parallel()
	if *limboFull != "" {
		vendorLimbo(t, *limboFull)
	}
	data, err := os.ReadFile(filepath.Join(limboDir, "limbo.json"))
	if err != nil {
		t.Fatal(err)
	}
	var suite limboSuite
	if err := json.Unmarshal(data, &suite); err != nil || suite.Version != 1 {
		t.Fatalf("reading the vendored limbo.json: version %d, %v", suite.Version, err)
	}
	dir := t.TempDir()
	var pass, expected, fail int
	for _, tc := range suite.Testcases {
		if why := limboSkip(tc); why != "" {
			t.Errorf("%s: vendored, but the selection skips it (%s): run with -limbo-vendor", tc.ID, why)
			continue
		}
		ok, out := runLimboCase(t, dir, tc)
		want := tc.ExpectedResult == "SUCCESS"
		why, listed := limboExpected[tc.ID]
		switch {
		case ok == want && listed:
			t.Errorf("%s: now agrees with the suite (%s): remove it from limboExpected and the docs", tc.ID, out)
		case ok == want:
			pass++
		case listed:
			expected++
			t.Logf("expected failure %s: minica says %s; %s", tc.ID, out, why)
		default:
			fail++
			t.Errorf("%s: minica verify says %s; the suite expects %s\n%s", tc.ID, out, tc.ExpectedResult, tc.Description)
		}
	}
	summary, _ := os.ReadFile(filepath.Join(limboDir, "SELECTION.txt"))
	t.Logf("x509-limbo: %d cases run: %d agree, %d expected failures, %d failures\n%s",
		len(suite.Testcases), pass, expected, fail, summary)
}

// runLimboCase writes the case's certificates and CRLs under dir and runs
// minica verify --trust on them; ok is the verdict, out its output line.
func runLimboCase(t *testing.T, dir string, tc limboCase) (ok bool, out string) {
	t.Helper()
	d := filepath.Join(dir, strings.NewReplacer(":", "_", "/", "_").Replace(tc.ID))
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(name string, pems []string) string {
		f := filepath.Join(d, name)
		if err := os.WriteFile(f, []byte(strings.Join(pems, "")), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	args := []string{"minica", "verify", "--trust", write("trusted.pem", tc.TrustedCerts), "--purpose", limboPurpose(tc)}
	if len(tc.UntrustedIntermediate) > 0 {
		args = append(args, "--untrusted", write("untrusted.pem", tc.UntrustedIntermediate))
	}
	if len(tc.CRLs) > 0 {
		args = append(args, "--crl", write("crls.pem", tc.CRLs))
	} else {
		args = append(args, "--no-crl")
	}
	at := time.Now()
	if tc.ValidationTime != nil {
		at = *tc.ValidationTime
	}
	args = append(args, "--at", at.UTC().Format(time.RFC3339), write("peer.pem", []string{tc.PeerCertificate}))
	var stdout, stderr bytes.Buffer
	e := newEnv()
	e.stdin, e.stdout, e.stderr = strings.NewReader(""), &stdout, &stderr
	e.terminal = func() bool { return false }
	code := runInTest(context.Background(), args, e)
	out = strings.TrimSpace(stdout.String() + stderr.String())
	switch code {
	case 0:
		return true, out
	case 1:
		return false, out
	}
	t.Fatalf("%s: minica %v: exit %d (a usage error of the harness)\n%s", tc.ID, args[1:], code, out)
	return false, ""
}

// vendorLimbo selects the cases of the whole suite in full that fit, writes
// them (without the private keys of the peers, which no check needs) to
// limboDir/limbo.json and the counts by rule to limboDir/SELECTION.txt.
func vendorLimbo(t *testing.T, full string) {
	data, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	var suite limboSuite
	if err := json.Unmarshal(data, &suite); err != nil || suite.Version != 1 {
		t.Fatalf("reading %s: version %d, %v", full, suite.Version, err)
	}
	kept := limboSuite{Version: 1}
	skips := map[string]int{}
	for _, tc := range suite.Testcases {
		if why := limboSkip(tc); why != "" {
			skips[why]++
			continue
		}
		kept.Testcases = append(kept.Testcases, tc)
	}
	out, err := json.MarshalIndent(kept, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(limboDir, "limbo.json"), append(out, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d cases in the suite, %d selected, %d skipped:\n", len(suite.Testcases), len(kept.Testcases), len(suite.Testcases)-len(kept.Testcases))
	rules := make([]string, 0, len(skips))
	for r := range skips {
		rules = append(rules, r)
	}
	sort.Strings(rules)
	for _, r := range rules {
		fmt.Fprintf(&b, "%4d %s\n", skips[r], r)
	}
	if err := os.WriteFile(filepath.Join(limboDir, "SELECTION.txt"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

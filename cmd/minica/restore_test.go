package main

import (
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"minica/formats"
)

// crlNumber returns the number of the CRL in dir's crl.der, in decimal.
func crlNumber(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "crl.der"))
	if err != nil {
		t.Fatal(err)
	}
	crl, err := formats.ParseCRL(data)
	if err != nil {
		t.Fatal(err)
	}
	return crl.Number.String()
}

// The documented restore of an older backup (docs/ca-directory.md) under a
// running proxy that reads a published copy of the CRL: the next CRL of the
// restored CA gets a number above every one published before, so the proxy
// takes it and refuses the client revoked after the restore.
func TestProxyProcessRestoreOlderBackup(t *testing.T) {
	t.Parallel()
	tarTool := needTool(t, "tar", "tar")
	f := newProxyFixture(t)
	published := filepath.Join(t.TempDir(), "ca.crl")
	mustMinica(t, f.dir, "crl", "--out", published)
	p := f.startProxy(t, "--reload-interval", "200ms",
		"--cert", f.file(t, "app", ".chain.pem"), "--key", f.file(t, "app", ".key"),
		"--ca", filepath.Join(f.dir, "ca.crt"), "--crl", published)
	url := "https://" + p.addr + "/"
	parent, base := filepath.Split(f.dir)
	backup := filepath.Join(t.TempDir(), "minica-backup.tgz")
	if out, err := exec.Command(tarTool, "-C", parent, "-czf", backup, base).CombinedOutput(); err != nil {
		t.Fatalf("taking the backup: %v\n%s", err, out)
	}

	// After the backup, alice is revoked and the CRL published again.
	mustMinica(t, f.dir, "revoke", "alice")
	mustMinica(t, f.dir, "crl", "--out", published)
	held := crlNumber(t, f.dir)
	p.waitLog(t, " reload crl_number="+held)

	// The CA directory is lost; the backup is restored to a new place.
	restoredParent := t.TempDir()
	if out, err := exec.Command(tarTool, "-C", restoredParent, "-xzf", backup).CombinedOutput(); err != nil {
		t.Fatalf("restoring the backup: %v\n%s", err, out)
	}
	restored := filepath.Join(restoredParent, base)
	mustMinica(t, restored, "check")
	mark := len(p.stderr.String())
	mustMinica(t, restored, "revoke", "bob")
	mustMinica(t, restored, "crl", "--out", published)
	next := crlNumber(t, restored)
	if n, h := mustBig(t, next), mustBig(t, held); n.Cmp(h) <= 0 {
		t.Errorf("the first CRL after the restore has number %s, not above %s, the last one before", next, held)
	}
	// The proxy takes the new CRL or refuses it: wait for either, then
	// require the first.
	eventually(t, "the proxy's verdict on CRL "+next, func() string {
		log := p.stderr.String()[mark:]
		if strings.Contains(log, " reload crl_number="+next+"\n") || strings.Contains(log, "("+next+" < ") || strings.Contains(log, " < "+next+")") {
			return ""
		}
		return "without a line naming it:\n" + log
	})
	if !strings.Contains(p.stderr.String()[mark:], " reload crl_number="+next+"\n") {
		t.Fatalf("the proxy did not take CRL %s, published after the restore (it held %s):\n%s", next, held, p.stderr)
	}
	if _, _, _, _, err := get(f.client(t, "bob"), url); err == nil || !strings.Contains(err.Error(), "bad certificate") {
		t.Errorf("a new connection of bob, revoked after the restore: %v; want a bad certificate alert", err)
	}
	if status, body := plainGet(t, "http://"+p.metricsAddr+"/metrics"); status != 200 || metricCRLNumber(body) != next {
		t.Errorf("/metrics: %d, CRL number %q; want %s in\n%s", status, metricCRLNumber(body), next, body)
	}
}

func mustBig(t *testing.T, s string) *big.Int {
	t.Helper()
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		t.Fatalf("%q is not a decimal number", s)
	}
	return n
}

var crlNumberMetric = regexp.MustCompile(`(?m)^minica_proxy_crl_number (\S+)$`)

// metricCRLNumber returns the value of minica_proxy_crl_number in a
// /metrics body as a decimal integer, or "" if there is none. The value is
// a float64 (Prometheus); CRL numbers made of milliseconds stay exact in it.
func metricCRLNumber(body string) string {
	m := crlNumberMetric.FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return m[1]
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

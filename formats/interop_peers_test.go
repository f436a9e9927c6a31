//go:build interop

package formats_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"minica/formats"
	"minica/internal/testca"
)

// TestP12FromPeers reads bundles that Java's keytool and NSS's pk12util
// write, as users bring them to convert and inspect.
func TestP12FromPeers(t *testing.T) {
	t.Run("keytool", func(t *testing.T) {
		dir := t.TempDir()
		p12 := filepath.Join(dir, "java.p12")
		run(t, "keytool", "-genkeypair", "-alias", "me", "-keyalg", "EC", "-groupname", "secp256r1",
			"-dname", "CN=java", "-storetype", "PKCS12", "-keystore", p12, "-storepass", "changeit123", "-validity", "30")
		data, err := os.ReadFile(p12)
		if err != nil {
			t.Fatal(err)
		}
		key, leaf, chain, err := formats.DecodeP12(data, "changeit123")
		if err != nil {
			t.Fatal(err)
		}
		if leaf.Subject.CommonName != "java" || len(chain) != 0 || formats.KeyMatchesCertificate(key, leaf) != nil {
			t.Errorf("DecodeP12(keytool bundle) = %s with %d CA certificates", leaf.Subject, len(chain))
		}
	})
	t.Run("pk12util", func(t *testing.T) {
		ca := testca.New(t, "NSS Export Root")
		id := clientIdentities(t, ca)[0]
		data, err := formats.EncodeP12(formats.P12Modern, id.key, id.leaf, id.chain, "in-pass")
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		in := writeFile(t, dir, "in.p12", data)
		inPW := writeFile(t, dir, "in.pw", []byte("in-pass\n"))
		outPW := writeFile(t, dir, "out.pw", []byte("out-pass\n"))
		db := "sql:" + t.TempDir()
		run(t, "certutil", "-N", "-d", db, "--empty-password")
		run(t, "pk12util", "-i", in, "-d", db, "-w", inPW)
		out := filepath.Join(dir, "out.p12")
		run(t, "pk12util", "-o", out, "-n", id.leaf.Subject.CommonName, "-d", db, "-w", outPW)
		exported, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		// NSS writes BER: the algorithms are readable, decoding is refused
		// with a specific error rather than a parse failure.
		if _, err := formats.P12EncryptionInfo(exported); err != nil {
			t.Errorf("P12EncryptionInfo(pk12util bundle) = %v", err)
		}
		if _, _, _, err := formats.DecodeP12(exported, "out-pass"); !errors.Is(err, formats.ErrUnsupported) {
			t.Errorf("DecodeP12(pk12util bundle) error = %v; want ErrUnsupported", err)
		}
	})
}

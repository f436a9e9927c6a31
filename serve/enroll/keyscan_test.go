package enroll

import (
	"bytes"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"minica/ca"
	"minica/formats"
	"minica/internal/keyscan"
)

// After downloads in every format the CA directory holds neither the key
// that was generated for the person (in any encoding keyscan knows), nor
// the bundle's password, nor the token: only the CA's own key is a private
// key there.
func TestEnrollKeepsNoKeyAfterDownload(t *testing.T) {
	f := newEnrollFixture(t, nil)
	type done struct {
		token string
		leaf  any
	}
	var downloads []done
	for _, format := range []string{"p12", "p12-compat", "mobileconfig"} {
		name := "user-" + format
		token := f.create(t, name, ca.EnrollIdentity{}, time.Hour)
		rec := f.send(t, enrollReq{token: token, form: download(f.csrf(t, token), testPassword, format)})
		if rec.Code != http.StatusOK {
			t.Fatalf("download %s = %d:\n%s", format, rec.Code, rec.Body)
		}
		p12 := rec.Body.Bytes()
		if format == "mobileconfig" {
			p12 = checkMobileconfig(t, p12, f.CA.Cert)
		}
		_, leaf, _, err := formats.DecodeP12(p12, testPassword)
		if err != nil {
			t.Fatal(err)
		}
		downloads = append(downloads, done{token: token, leaf: leaf.PublicKey})
	}
	caKey := filepath.Join(f.Dir, "ca.key")
	for _, d := range downloads {
		found, st, err := keyscan.Scan([]string{f.Dir}, d.leaf, func(file string) bool { return file == caKey })
		if err != nil {
			t.Fatal(err)
		}
		if st.Files == 0 {
			t.Fatal("keyscan looked at no file")
		}
		for _, x := range found {
			t.Errorf("private key material in the CA directory after a download: %s", x)
		}
	}
	filepath.WalkDir(f.Dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(data, []byte(testPassword)) {
			t.Errorf("%s holds the bundle password", path)
		}
		for _, d := range downloads {
			if bytes.Contains(data, []byte(d.token)) {
				t.Errorf("%s holds a token", path)
			}
		}
		return nil
	})
}

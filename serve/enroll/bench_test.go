package enroll

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"minica/ca"
)

// BenchmarkEnrollDownload measures one download on the server: the key
// generated, the token burnt, the certificate issued and recorded, the
// bundle encrypted (the profiles' real iteration counts). Creating the
// link and loading its page are outside the timer. With -cpuprofile it
// shows where a download's time goes (docs/performance.md).
func BenchmarkEnrollDownload(b *testing.B) {
	for _, bc := range []struct {
		name, format string
		key          ca.KeyType
	}{
		{"ecdsa-p256/p12", "p12", ca.ECDSAP256},
		{"ecdsa-p256/p12-compat", "p12-compat", ca.ECDSAP256},
		{"ecdsa-p256/mobileconfig", "mobileconfig", ca.ECDSAP256},
		{"rsa-2048/p12", "p12", ca.RSA2048},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c, err := ca.Init(b.TempDir()+"/ca", ca.InitOptions{CommonName: "Bench Root", FirstCRL: true})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			signer, _ := c.LoadSigner(nil)
			h, err := New(Config{CA: c, Signer: signer, AllowHTTP: true, Rate: 1 << 30, Burst: 1 << 30, TotalRate: 1 << 30, TotalBurst: 1 << 30})
			if err != nil {
				b.Fatal(err)
			}
			i := 0
			for b.Loop() {
				b.StopTimer()
				i++
				created, err := c.CreateEnrollment("u"+strconv.Itoa(i), ca.EnrollIdentity{KeyType: bc.key}, time.Hour)
				if err != nil {
					b.Fatal(err)
				}
				e, _ := c.LookupEnrollment(created.Token)
				form := url.Values{"csrf": {csrfToken(e)}, "action": {"download"}, "format": {bc.format},
					"password": {"bench password"}, "password2": {"bench password"}}
				req := httptest.NewRequest(http.MethodPost, "/enroll/"+created.Token, strings.NewReader(form.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				rec := httptest.NewRecorder()
				b.StartTimer()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("download = %d", rec.Code)
				}
			}
		})
	}
}

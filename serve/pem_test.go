package serve

import (
	"bytes"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

// The PEM of a CRL is encoded for each request; its Content-Length must
// match what is written, for every length of DER (line breaks at 64).
func TestPublishedPEM(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 47, 48, 49, 95, 96, 97, 1000, 4950025} {
		der := bytes.Repeat([]byte{0x5a}, n)
		p := &crlBody{der: der}
		var buf bytes.Buffer
		p.writePEM(&buf)
		want := pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: der})
		if !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("%d bytes: writePEM differs from pem.EncodeToMemory", n)
		}
		if got := p.pemLen(); got != len(want) {
			t.Errorf("%d bytes: pemLen() = %d; want %d", n, got, len(want))
		}
	}
}

// GET /crl.pem answers the PEM of the CRL served as DER, with its length;
// HEAD the same headers and no body.
func TestServeCRLPEM(t *testing.T) {
	f := newFixture(t, nil)
	h := f.srv.Handler()
	get := func(method, path string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(method, path, nil))
		return w
	}
	der := get("GET", "/crl.der").Body.Bytes()
	w := get("GET", "/crl.pem")
	want := pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: der})
	if w.Code != http.StatusOK || !bytes.Equal(w.Body.Bytes(), want) {
		t.Fatalf("GET /crl.pem = %d %q; want 200 and the PEM of /crl.der", w.Code, w.Body.Bytes())
	}
	if cl := w.Header().Get("Content-Length"); cl != strconv.Itoa(len(want)) {
		t.Errorf("Content-Length %s; want %d", cl, len(want))
	}
	head := get("HEAD", "/crl.pem")
	if head.Code != http.StatusOK || head.Body.Len() != 0 || head.Header().Get("Content-Length") != strconv.Itoa(len(want)) {
		t.Errorf("HEAD /crl.pem = %d, %d body bytes, Content-Length %s", head.Code, head.Body.Len(), head.Header().Get("Content-Length"))
	}
}

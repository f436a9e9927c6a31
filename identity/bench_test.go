package identity

import (
	"net/http"
	"testing"
)

func BenchmarkNewIdentity(b *testing.B) {
	id := goldenIdentity(b)
	for b.Loop() {
		if _, err := New(id.Cert, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRender(b *testing.B) {
	id := goldenIdentity(b)
	for _, p := range Profiles {
		h, err := NewHeaders(p, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(p, func(b *testing.B) {
			for b.Loop() {
				h.Render(id)
			}
		})
	}
}

func BenchmarkStrip(b *testing.B) {
	h, _ := NewHeaders("", nil)
	ns := h.Namespace()
	in := http.Header{
		"Accept": {"*/*"}, "User-Agent": {"curl/8"}, "Accept-Encoding": {"gzip"},
		"Cookie": {"a=b"}, "X-Request-Id": {"1234"}, "Authorization": {"Bearer x"},
	}
	for b.Loop() {
		h := in.Clone()
		ns.Strip(h)
	}
}

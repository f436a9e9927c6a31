package identity

import "testing"

func TestNamespaceHolds(t *testing.T) {
	h, err := NewHeaders("rfc9440", []string{"X-User=cn"})
	if err != nil {
		t.Fatal(err)
	}
	ns := h.Namespace()
	tests := []struct {
		name string
		want bool
	}{
		{"X-SSL-Client-CN", true}, {"x_ssl_client_cn", true}, {"X_SSL_CLIENT_DN_CN", true},
		{"X-Ssl-Client-Anything", true}, {"Client-Cert", true}, {"client_cert_chain", true},
		{"X-Forwarded-Client-Cert", true}, {"X_Forwarded_For", true}, {"Forwarded", true},
		{"X-Forwarded-Host", true}, {"x-user", true}, {"X_USER", true},
		{"X-Usr", false}, {"Accept", false}, {"X-SSL", false}, {"Authorization", false}, {"Forwarded-Not", false},
	}
	for _, tt := range tests {
		if got := ns.Holds(tt.name); got != tt.want {
			t.Errorf("Holds(%q) = %v; want %v", tt.name, got, tt.want)
		}
	}
}

package serverconf

import "testing"

func TestSystemdAgentGolden(t *testing.T) {
	const bin = "/usr/local/bin/minica"
	tests := []struct {
		name string
		a    Agent
	}{
		{"default", Agent{Name: "app", Minica: bin, URL: "https://pki.example.com:8443", CAFile: "/etc/app/ca.pem",
			CertFile: "/etc/app/app.crt", KeyFile: "/etc/app/app.key", Exec: []string{"systemctl", "reload", "app"}}},
		{"custom", Agent{Name: "web.1", Minica: "/opt/mini ca/minica", URL: "https://[::1]:8443/pki", CAFile: "/etc/ssl/minica ca.pem",
			CertFile: "/srv/web/tls/cert.pem", KeyFile: "/srv/web/private/key.pem", ChainFile: "/srv/web/tls/chain.pem",
			Exec: []string{"/usr/sbin/nginx", "-s", "reload"}, RenewAt: 0.5, User: "www-data", CAFingerprint: "3f4c1e2d5a6b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f"}},
		{"noexec", Agent{Name: "db", Minica: bin, URL: "https://pki:8443", CAFile: "/etc/db/ca.pem",
			CertFile: "/etc/db/db.crt", KeyFile: "/etc/db/db.key"}},
		{"token", Agent{Name: "web2", Minica: bin, URL: "https://pki.example.com:8443", CAFile: "/etc/web2/ca.pem",
			CertFile: "/etc/web2/tls.crt", KeyFile: "/etc/web2/tls.key", TokenFile: "/run/web2.token", Exec: []string{"systemctl", "reload", "nginx"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SystemdAgent(&tt.a)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "systemd-agent."+tt.name, got)
		})
	}
}

func TestSystemdAgentErrors(t *testing.T) {
	ok := Agent{Name: "app", Minica: "/bin/minica", URL: "https://pki:8443", CAFile: "/ca.pem", CertFile: "/a.crt", KeyFile: "/a.key"}
	tests := []struct {
		name    string
		mod     func(*Agent)
		wantErr string
	}{
		{name: "relative cert", mod: func(a *Agent) { a.CertFile = "a.crt" }, wantErr: `the certificate path "a.crt" is not absolute`},
		{name: "relative key", mod: func(a *Agent) { a.KeyFile = "a.key" }, wantErr: `the key path "a.key" is not absolute`},
		{name: "relative chain", mod: func(a *Agent) { a.ChainFile = "c.pem" }, wantErr: `the chain file path "c.pem" is not absolute`},
		{name: "relative token", mod: func(a *Agent) { a.TokenFile = "web.token" }, wantErr: `the token file path "web.token" is not absolute`},
		{name: "relative CA", mod: func(a *Agent) { a.CAFile = "" }, wantErr: `the CA file path "" is not absolute`},
		{name: "http", mod: func(a *Agent) { a.URL = "http://pki:8080" }, wantErr: `the renewal URL "http://pki:8080" is not https://HOST:PORT`},
		{name: "name", mod: func(a *Agent) { a.Name = "a/b" }, wantErr: `the service name "a/b" is not letters, digits, '-', '_' and '.'`},
		{name: "fraction", mod: func(a *Agent) { a.RenewAt = 1 }, wantErr: "the renewal fraction 1 is not from 0 to below 1"},
		{name: "empty exec", mod: func(a *Agent) { a.Exec = []string{} }, wantErr: "the command after a renewal is empty"},
		{name: "fingerprint", mod: func(a *Agent) { a.CAFingerprint = "ab:cd" }, wantErr: `the CA fingerprint "ab:cd" is not 64 hex digits`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := ok
			tt.mod(&a)
			if _, err := SystemdAgent(&a); err == nil || err.Error() != tt.wantErr {
				t.Errorf("SystemdAgent() error = %v; want %q", err, tt.wantErr)
			}
		})
	}
}

package serverconf

import (
	"testing"
	"time"
)

func TestSystemdServeGolden(t *testing.T) {
	const bin = "/usr/local/bin/minica"
	tests := []struct {
		name string
		s    Serve
	}{
		{"default", Serve{Minica: bin, Dir: mainCA.dir, User: "minica", Listen: "127.0.0.1:8080"}},
		{"tls", Serve{Minica: bin, Dir: mainCA.dir, User: "minica", Listen: ":80", ListenTLS: "[::1]:8443",
			ServerCert: "pki.example.com", MetricsListen: "127.0.0.1:9100", PasswordFile: "/etc/minica/pw"}},
		{"nosign", Serve{Minica: "/opt/mini ca/minica", Dir: spaceCA.dir, Listen: "8080", NoSign: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SystemdServe(&tt.s)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "systemd-serve."+tt.name, got)
		})
	}
}

func TestSystemdServeErrors(t *testing.T) {
	ok := Serve{Minica: "/bin/minica", Dir: "/ca", Listen: "127.0.0.1:8080"}
	tests := []struct {
		name    string
		mod     func(*Serve)
		wantErr string
	}{
		{name: "relative dir", mod: func(s *Serve) { s.Dir = "ca" }, wantErr: `the CA directory path "ca" is not absolute`},
		{name: "relative minica", mod: func(s *Serve) { s.Minica = "minica" }, wantErr: `the minica binary path "minica" is not absolute`},
		{name: "relative password", mod: func(s *Serve) { s.PasswordFile = "pw" }, wantErr: `the password file path "pw" is not absolute`},
		{name: "no listener", mod: func(s *Serve) { s.Listen = "" }, wantErr: "serve needs a listener: --listen, --listen-tls or both"},
		{name: "tls without cert", mod: func(s *Serve) { s.ListenTLS = ":8443" }, wantErr: "--listen-tls needs --server-cert"},
		{name: "cert without tls", mod: func(s *Serve) { s.ServerCert = "pki" }, wantErr: "--server-cert is for --listen-tls"},
		{name: "no-sign with password", mod: func(s *Serve) { s.NoSign, s.PasswordFile = true, "/pw" }, wantErr: "--no-sign never reads the CA key: drop --password-file"},
		{name: "bad port", mod: func(s *Serve) { s.Listen = "127.0.0.1:0" }, wantErr: `--listen: "127.0.0.1:0": the port must be a number from 1 to 65535`},
		{name: "host name", mod: func(s *Serve) { s.MetricsListen = "localhost:9100" }, wantErr: `--metrics-listen: "localhost:9100": the address must be an IP address`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := ok
			tt.mod(&s)
			if _, err := SystemdServe(&s); err == nil || err.Error() != tt.wantErr {
				t.Errorf("SystemdServe() error = %v; want %q", err, tt.wantErr)
			}
		})
	}
}

func TestCRLFetchGolden(t *testing.T) {
	const bin = "/usr/local/bin/minica"
	tests := []struct {
		name string
		f    Fetch
	}{
		{"nginx", Fetch{Server: Nginx, Minica: bin, URL: "http://pki.example.com/crl.der"}},
		{"apache", Fetch{Server: Apache, Minica: bin, URL: "http://pki.example.com/crl.der"}},
		{"haproxy", Fetch{Server: HAProxy, Minica: bin, URL: "http://pki.example.com/crl.der"}},
		{"custom", Fetch{Server: Nginx, Minica: "/opt/mini ca/minica", URL: "https://pki.example.com:8443/crl.pem",
			HostDir: "/srv/tls files", CRLCA: "/etc/ssl/pki-ca.pem", Reload: "kill -HUP $(cat /run/nginx.pid) # 100%", Every: 5 * time.Minute,
			CAFingerprint: "3f4c1e2d5a6b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CRLFetch(&tt.f)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "crl-fetch."+tt.name, got)
		})
	}
}

func TestCRLFetchErrors(t *testing.T) {
	ok := Fetch{Server: Nginx, Minica: "/bin/minica", URL: "http://pki/crl.der"}
	tests := []struct {
		name    string
		mod     func(*Fetch)
		wantErr string
	}{
		{name: "proxy", mod: func(f *Fetch) { f.Server = Proxy }, wantErr: `unknown server "proxy": want nginx, apache or haproxy`},
		{name: "relative minica", mod: func(f *Fetch) { f.Minica = "minica" }, wantErr: `the minica binary path "minica" is not absolute`},
		{name: "relative host dir", mod: func(f *Fetch) { f.HostDir = "etc" }, wantErr: `the host directory path "etc" is not absolute`},
		{name: "relative CRL CA", mod: func(f *Fetch) { f.URL, f.CRLCA = "https://pki/crl.der", "ca.pem" }, wantErr: `the CRL server's CA file path "ca.pem" is not absolute`},
		{name: "no URL", mod: func(f *Fetch) { f.URL = "" }, wantErr: `the CRL URL "" is not an http or https URL`},
		{name: "file URL", mod: func(f *Fetch) { f.URL = "file:///srv/ca/crl.der" }, wantErr: `the CRL URL "file:///srv/ca/crl.der" is not an http or https URL`},
		{name: "relative URL", mod: func(f *Fetch) { f.URL = "pki/crl.der" }, wantErr: `the CRL URL "pki/crl.der" is not an http or https URL`},
		{name: "user in URL", mod: func(f *Fetch) { f.URL = "http://u:p@pki/crl.der" }, wantErr: `the CRL URL "http://u:p@pki/crl.der" is not an http or https URL`},
		{name: "CRL CA for http", mod: func(f *Fetch) { f.CRLCA = "/ca.pem" }, wantErr: `the CRL URL "http://pki/crl.der" is http: a CA file for its server is for https`},
		{name: "too often", mod: func(f *Fetch) { f.Every = 5 * time.Second }, wantErr: "the fetch interval 5s is not from 10s to 1d"},
		{name: "too rarely", mod: func(f *Fetch) { f.Every = 48 * time.Hour }, wantErr: "the fetch interval 2d is not from 10s to 1d"},
		{name: "fingerprint", mod: func(f *Fetch) { f.CAFingerprint = "sha256:00" }, wantErr: `the CA fingerprint "sha256:00" is not 64 hex digits`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := ok
			tt.mod(&f)
			if _, err := CRLFetch(&f); err == nil || err.Error() != tt.wantErr {
				t.Errorf("CRLFetch() error = %v; want %q", err, tt.wantErr)
			}
		})
	}
}

// TestWebOnHost checks that a front end on a host without a CA directory
// reads every file from the host directory, the CRL where the fetch job
// puts it.
func TestWebOnHost(t *testing.T) {
	for _, server := range WebServers {
		t.Run(server, func(t *testing.T) {
			f := mainCA.front(t, "http://127.0.0.1:8080", "443")
			f.OnHost(DefaultHostDir(server))
			got, err := Web(server, f)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, server+".host", got)
		})
	}
	f := mainCA.front(t, "http://127.0.0.1:8080", "443")
	f.OnHost("etc/nginx")
	if _, err := Web(Nginx, f); err == nil || err.Error() != `the host directory path "etc/nginx" is not absolute` {
		t.Errorf("Web(relative host dir) error = %v", err)
	}
}

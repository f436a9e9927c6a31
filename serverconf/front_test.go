package serverconf

import "testing"

func TestParseListen(t *testing.T) {
	tests := []struct {
		in, addr, wantErr string
		port              int
	}{
		{in: "443", port: 443},
		{in: ":8443", port: 8443},
		{in: "127.0.0.1:8443", addr: "127.0.0.1", port: 8443},
		{in: "[::1]:443", addr: "::1", port: 443},
		{in: "0", wantErr: `"0": the port must be a number from 1 to 65535`},
		{in: "99999999999999999999", wantErr: `"99999999999999999999": the port must be a number from 1 to 65535`},
		{in: "65536", wantErr: `"65536": the port must be a number from 1 to 65535`},
		{in: "https", wantErr: `"https": the port must be a number from 1 to 65535`},
		{in: "", wantErr: `"": the port must be a number from 1 to 65535`},
		{in: "localhost:443", wantErr: `"localhost:443": the address must be an IP address`},
		{in: "::1:443", wantErr: `"::1:443" is not PORT or HOST:PORT`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			addr, port, err := ParseListen(tt.in)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("ParseListen(%q) error = %v; want %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil || addr != tt.addr || port != tt.port {
				t.Fatalf("ParseListen(%q) = %q, %d, %v; want %q, %d", tt.in, addr, port, err, tt.addr, tt.port)
			}
		})
	}
}

func TestParseUpstream(t *testing.T) {
	tests := []struct {
		in, want, wantErr string
	}{
		{in: "127.0.0.1:8080", want: "http://127.0.0.1:8080"},
		{in: "http://app.internal:3000/", want: "http://app.internal:3000"},
		{in: "http://app.internal", want: "http://app.internal:80"},
		{in: "http://[::1]:9000", want: "http://[::1]:9000"},
		{in: "https://app:8443", wantErr: `"https://app:8443": only http upstreams are supported (keep the app on a loopback or private address)`},
		{in: "unix:/run/app.sock", wantErr: `"unix:/run/app.sock": only http upstreams are supported (keep the app on a loopback or private address)`},
		{in: "app", wantErr: `"app": want http://HOST:PORT, https://HOST:PORT or unix:/PATH`},
		{in: "ftp://app", wantErr: `"ftp://app": want http://HOST:PORT, https://HOST:PORT or unix:/PATH`},
		{in: "http://app:80/sub", wantErr: `"http://app:80/sub": want http://HOST:PORT`},
		{in: "http://u:p@app:80", wantErr: `"http://u:p@app:80": want http://HOST:PORT`},
		{in: "http://app:80/?q=1", wantErr: `"http://app:80/?q=1": want http://HOST:PORT`},
		{in: "http://", wantErr: `"http://": want http://HOST:PORT, https://HOST:PORT or unix:/PATH`},
		{in: "http://app:80#top", wantErr: `"http://app:80#top": want http://HOST:PORT`},
		{in: "http://a b", wantErr: `"http://a b" is not a URL`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			u, err := ParseUpstream(tt.in)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("ParseUpstream(%q) error = %v; want %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil || u.String() != tt.want {
				t.Fatalf("ParseUpstream(%q) = %v, %v; want %s", tt.in, u, err, tt.want)
			}
		})
	}
}

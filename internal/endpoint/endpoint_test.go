package endpoint

import (
	"errors"
	"testing"
)

func TestParseUpstream(t *testing.T) {
	tests := []struct {
		in, want, socket, wantErr string
	}{
		{in: "127.0.0.1:8080", want: "http://127.0.0.1:8080"},
		{in: "localhost:8080", want: "http://localhost:8080"},
		{in: "[::1]:9000", want: "http://[::1]:9000"},
		{in: "http://127.0.0.1:8080", want: "http://127.0.0.1:8080"},
		{in: "http://app.internal", want: "http://app.internal"},
		{in: "http://app.internal:3000/", want: "http://app.internal:3000/"},
		{in: "https://app:8443/base", want: "https://app:8443/base"},
		{in: "unix:/run/app.sock", want: "http://unix/", socket: "/run/app.sock"},
		{in: "unix:", wantErr: `"unix:": empty socket path`},
		{in: "app", wantErr: `"app": want http://HOST:PORT, https://HOST:PORT or unix:/PATH`},
		{in: "app:http", wantErr: `"app:http": want http://HOST:PORT, https://HOST:PORT or unix:/PATH`},
		{in: "app:-1", wantErr: `"app:-1": want http://HOST:PORT, https://HOST:PORT or unix:/PATH`},
		{in: "", wantErr: `"": want http://HOST:PORT, https://HOST:PORT or unix:/PATH`},
		{in: "ftp://app:21", wantErr: `"ftp://app:21": want http://HOST:PORT, https://HOST:PORT or unix:/PATH`},
		{in: "http://", wantErr: `"http://": want http://HOST:PORT, https://HOST:PORT or unix:/PATH`},
		{in: "http://a b", wantErr: `"http://a b" is not a URL`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			up, err := ParseUpstream(tt.in)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("ParseUpstream(%q) error = %v; want %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil || up.URL.String() != tt.want || up.Socket != tt.socket {
				t.Fatalf("ParseUpstream(%q) = %v, %q, %v; want %s, %q", tt.in, up.URL, up.Socket, err, tt.want, tt.socket)
			}
		})
	}
}

func TestParseListen(t *testing.T) {
	tests := []struct {
		in, host, port, wantErr string
	}{
		{in: "18443", port: "18443"},
		{in: ":8443", port: "8443"},
		{in: "0", port: "0"},
		{in: "127.0.0.1:0", host: "127.0.0.1", port: "0"},
		{in: "127.0.0.1:8443", host: "127.0.0.1", port: "8443"},
		{in: "127.0.0.1:99999", host: "127.0.0.1", port: "99999"},
		{in: "localhost:8443", host: "localhost", port: "8443"},
		{in: "[::1]:443", host: "::1", port: "443"},
		{in: "https", wantErr: `"https": the port must be a number`},
		{in: ":https", wantErr: `":https": the port must be a number`},
		{in: "+80", wantErr: `"+80": the port must be a number`},
		{in: "", wantErr: `"": the port must be a number`},
		{in: "1.2.3.4:", wantErr: `"1.2.3.4:": the port must be a number`},
		{in: "::1:443", wantErr: `"::1:443" is not PORT or HOST:PORT`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			host, port, err := ParseListen(tt.in)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("ParseListen(%q) error = %v; want %q", tt.in, err, tt.wantErr)
				}
				if errors.Is(err, ErrListenPort) != (tt.in != "::1:443") {
					t.Errorf("ParseListen(%q) error %v: errors.Is(ErrListenPort) is wrong", tt.in, err)
				}
				return
			}
			if err != nil || host != tt.host || port != tt.port {
				t.Fatalf("ParseListen(%q) = %q, %q, %v; want %q, %q", tt.in, host, port, err, tt.host, tt.port)
			}
		})
	}
}

package formats_test

import (
	"errors"
	"testing"

	"minica/formats"
)

func TestObjectPrivateKey(t *testing.T) {
	want := testKey(t, "server-key.pem")
	errPrompt := errors.New("no terminal")
	tests := []struct {
		name      string
		file      string
		password  func() ([]byte, error) // nil: no source of passwords
		wantAsked bool
		wantErr   error
		wantMsg   string
	}{
		{name: "plain key, not asked", file: "server-key.pem", password: func() ([]byte, error) { return nil, errPrompt }},
		{name: "plain DER key", file: "server-key.der"},
		{name: "bundle's key", file: "bundle.pem"},
		{name: "encrypted, right password", file: "server-key-enc.pem", wantAsked: true,
			password: func() ([]byte, error) { return []byte(testPassword), nil }},
		{name: "encrypted, wrong password", file: "server-key-enc.der", wantAsked: true,
			password: func() ([]byte, error) { return []byte("wrong"), nil }, wantErr: formats.ErrWrongPassword},
		{name: "encrypted, no password given", file: "server-key-enc.pem", wantAsked: true,
			password: func() ([]byte, error) { return nil, nil }, wantErr: formats.ErrPasswordRequired},
		{name: "encrypted, no source", file: "server-key-enc.pem", wantErr: formats.ErrPasswordRequired},
		{name: "encrypted, prompt fails", file: "server-key-enc.pem", wantAsked: true,
			password: func() ([]byte, error) { return nil, errPrompt }, wantErr: errPrompt},
		{name: "certificate", file: "server.pem", wantErr: formats.ErrWrongKind,
			wantMsg: "expected a private key, found a PEM certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj, err := formats.Detect(readTestdata(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			asked := false
			var password func() ([]byte, error)
			if tt.password != nil {
				password = func() ([]byte, error) { asked = true; return tt.password() }
			}
			key, err := obj.PrivateKey(password)
			if asked != tt.wantAsked && tt.password != nil {
				t.Errorf("password asked = %v; want %v", asked, tt.wantAsked)
			}
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("PrivateKey() error = %v; want matching %v", err, tt.wantErr)
				}
				if tt.wantMsg != "" && err.Error() != tt.wantMsg {
					t.Fatalf("PrivateKey() error = %q; want %q", err, tt.wantMsg)
				}
				return
			}
			if err != nil {
				t.Fatalf("PrivateKey() error = %v", err)
			}
			if tt.file != "bundle.pem" && !want.Equal(key) {
				t.Errorf("PrivateKey() returned another key")
			}
		})
	}
}

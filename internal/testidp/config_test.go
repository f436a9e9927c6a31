package testidp

import (
	"strings"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	user := User{Username: "simon", Password: "pw"}
	client := Client{ID: "minica", Secret: "s", RedirectURIs: []string{"http://127.0.0.1/cb"}}
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"valid", Config{Users: []User{user}, Clients: []Client{client}}, ""},
		{"empty username", Config{Users: []User{{Password: "pw"}}}, "user 0: empty username"},
		{"duplicate user", Config{Users: []User{user, user}}, `user "simon": listed twice`},
		{"empty password", Config{Users: []User{{Username: "una"}}}, `user "una": empty password`},
		{"empty client ID", Config{Clients: []Client{{Secret: "s"}}}, "client 0: empty ID"},
		{"duplicate client", Config{Clients: []Client{client, client}}, `client "minica": listed twice`},
		{"public client", Config{Clients: []Client{{ID: "spa", RedirectURIs: client.RedirectURIs}}}, `client "spa": empty secret`},
		{"no redirect URI", Config{Clients: []Client{{ID: "app", Secret: "s"}}}, `client "app": no redirect URI`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.validate()
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("validate() = %v; want %q", err, tt.wantErr)
			}
		})
	}
}

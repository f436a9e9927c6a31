package ca

import (
	"errors"
	"minica/ca/store/pg"
	"strings"
	"testing"
)

func TestCheckStore(t *testing.T) {
	tests := []struct {
		store   string
		wantErr error
		want    string
	}{
		{store: ""},
		{store: "file"},
		{store: "postgres://minica@db.example.com/minica"},
		{store: "postgresql://minica@db.example.com:5433/minica?sslmode=verify-full&sslrootcert=/etc/ca.pem"},
		{store: "postgres:///minica?service=ca"},
		{store: "postgres://minica:pw@db.example.com/minica", wantErr: pg.ErrPassword, want: "PGPASSFILE"},
		{store: "postgres://db.example.com/minica?password=pw", wantErr: pg.ErrPassword},
		{store: "postgres://:pw@db.example.com/minica", wantErr: pg.ErrPassword},
		{store: "mysql://db.example.com/minica", wantErr: ErrBadStore, want: `invalid store "mysql://db.example.com/minica": want a postgres:// URL`},
		{store: "/srv/ca", wantErr: ErrBadStore},
		{store: "Postgres://x/y", wantErr: ErrBadStore},
		{store: "postgres://db.example.com/%zz", wantErr: ErrBadStore},
	}
	for _, tt := range tests {
		t.Run(tt.store, func(t *testing.T) {
			err := CheckStore(tt.store, testEngines...)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("CheckStore(%q) = %v; want %v", tt.store, err, tt.wantErr)
			}
			if tt.wantErr == pg.ErrPassword && strings.Contains(err.Error(), "pw") {
				t.Errorf("the error repeats the password: %v", err)
			}
			if err != nil && !strings.Contains(err.Error(), tt.want) {
				t.Errorf("CheckStore(%q) = %v; want containing %q", tt.store, err, tt.want)
			}
		})
	}
}

// Without an engine for it, a store URL is refused: ca itself links none.
func TestCheckStoreWithoutEngine(t *testing.T) {
	err := CheckStore("postgres://minica@db.example.com/minica")
	if want := `invalid store "postgres://minica@db.example.com/minica": want no other store here, or "file"`; !errors.Is(err, ErrBadStore) || !strings.Contains(err.Error(), want) {
		t.Fatalf("CheckStore() without engines = %v; want %q", err, want)
	}
}

// A CA on files knows nothing of PostgreSQL: OpenWith("file") and Open
// give the file store, and a store that cannot be used fails Open.
func TestOpenWithStore(t *testing.T) {
	c, _ := newTestCA(t, InitOptions{})
	dir := c.dir.Path()
	for _, store := range []string{"", "file"} {
		o, err := OpenWith(dir, OpenOptions{Store: store, Engines: testEngines})
		if err != nil || o.Store() != "file" {
			t.Fatalf("OpenWith(%q) = %v, %v; want the file store", store, o, err)
		}
		o.Close()
	}
	if _, err := OpenWith(dir, OpenOptions{Store: "postgres://u:secret@h/db", Engines: testEngines}); !errors.Is(err, pg.ErrPassword) || strings.Contains(err.Error(), "secret") {
		t.Fatalf("OpenWith(password) = %v", err)
	}
	if err := c.SetStore("postgres://minica@127.0.0.1:1/minica?connect_timeout=5"); err != nil {
		t.Fatal(err)
	}
	if _, err := openTest(dir); err == nil || !strings.Contains(err.Error(), `connecting to the store "postgres://minica@127.0.0.1:1/minica?connect_timeout=5"`) {
		t.Fatalf("Open with an unreachable store in the settings = %v", err)
	}
	if err := c.SetStore("file"); err != nil {
		t.Fatal(err)
	}
	o, err := openTest(dir)
	if err != nil || o.Settings.Store != "" {
		t.Fatalf("Open after SetStore(file) = %v (store %q)", err, o.Settings.Store)
	}
	o.Close()
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minica/ca"
)

func newCA(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ca")
	c, err := ca.Init(dir, ca.InitOptions{CommonName: "Fill Test"})
	if err != nil {
		t.Fatalf("ca.Init() error = %v", err)
	}
	c.Close()
	return dir
}

func TestFillRecordsReadBack(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, n := range []int{0, 1, 300, 600} {
		t.Run("", func(t *testing.T) {
			dir := newCA(t)
			if err := Fill(dir, n, 3, now); err != nil {
				t.Fatalf("Fill() error = %v", err)
			}
			c, err := ca.Open(dir)
			if err != nil {
				t.Fatalf("ca.Open() error = %v", err)
			}
			defer c.Close()
			names := map[string]bool{}
			for rec, err := range c.Records() {
				if err != nil {
					t.Fatalf("Records() error = %v", err)
				}
				if rec.StatusAt(now) != ca.StatusValid || rec.Profile != ca.Client || rec.Subject != "CN="+rec.Name {
					t.Errorf("record %s = %+v; want a valid client record with subject CN=%s", rec.Serial, rec, rec.Name)
				}
				if !rec.IssuedAt.Equal(now) || !rec.NotAfter.Equal(now.AddDate(1, 0, 0)) {
					t.Errorf("record %s issued %v, expires %v; want %v and a year later", rec.Serial, rec.IssuedAt, rec.NotAfter, now)
				}
				if names[rec.Name] {
					t.Errorf("name %s filled twice", rec.Name)
				}
				names[rec.Name] = true
			}
			if len(names) != n {
				t.Fatalf("got %d records; want %d", len(names), n)
			}
		})
	}
}

func TestFillSpreadsOverShards(t *testing.T) {
	dir := newCA(t)
	if err := Fill(dir, 512, 8, time.Now()); err != nil {
		t.Fatalf("Fill() error = %v", err)
	}
	shardDirs, err := os.ReadDir(filepath.Join(dir, "db"))
	if err != nil {
		t.Fatal(err)
	}
	if len(shardDirs) != shards {
		t.Fatalf("got %d shard directories; want %d", len(shardDirs), shards)
	}
	for _, s := range shardDirs {
		files, err := os.ReadDir(filepath.Join(dir, "db", s.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if !strings.HasPrefix(f.Name(), s.Name()) {
				t.Errorf("record %s is in shard %s", f.Name(), s.Name())
			}
		}
		if len(files) != 2 {
			t.Errorf("shard %s holds %d records; want 2", s.Name(), len(files))
		}
	}
}

func TestFillErrors(t *testing.T) {
	tests := []struct {
		name    string
		dir     func(t *testing.T) string
		n       int
		workers int
		wantErr string
	}{
		{name: "no CA", dir: func(t *testing.T) string { return t.TempDir() }, n: 1, workers: 1,
			wantErr: "ca.crt: no such file or directory"},
		{name: "missing directory", dir: func(t *testing.T) string { return filepath.Join(t.TempDir(), "nope") }, n: 1, workers: 1,
			wantErr: "no such file or directory"},
		{name: "negative count", dir: newCA, n: -1, workers: 1, wantErr: "invalid fill: -1 records, 1 workers"},
		{name: "no workers", dir: newCA, n: 1, workers: 0, wantErr: "invalid fill: 1 records, 0 workers"},
		{name: "database not writable", dir: func(t *testing.T) string {
			dir := newCA(t)
			if err := os.WriteFile(filepath.Join(dir, "db", "00"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			return dir
		}, n: 1, workers: 2, wantErr: `creating "db/00"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Fill(tt.dir(t), tt.n, tt.workers, time.Now())
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Fill() error = %v; want containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestRunUsage(t *testing.T) {
	dir := newCA(t)
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{name: "no dir", args: nil, wantCode: 2, wantStderr: "usage: fillrecords -dir CADIR"},
		{name: "stray argument", args: []string{"-dir", dir, "extra"}, wantCode: 2, wantStderr: "usage: fillrecords -dir CADIR"},
		{name: "unknown flag", args: []string{"-x"}, wantCode: 2, wantStderr: "flag provided but not defined: -x"},
		{name: "no CA", args: []string{"-dir", t.TempDir(), "-n", "1"}, wantCode: 1, wantStderr: "fillrecords: error: opening CA directory"},
		{name: "fills", args: []string{"-dir", dir, "-n", "10"}, wantCode: 0, wantStdout: "added 10 records to " + dir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tt.args, &stdout, &stderr); code != tt.wantCode {
				t.Fatalf("run() = %d; want %d (stderr %q)", code, tt.wantCode, stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.wantStdout) || !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Fatalf("run() stdout %q, stderr %q; want containing %q and %q", stdout.String(), stderr.String(), tt.wantStdout, tt.wantStderr)
			}
		})
	}
}

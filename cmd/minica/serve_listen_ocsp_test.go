package main

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// --listen-ocsp's errors exit as every command's: 2 for an address that is
// not PORT or HOST:PORT (a usage error), 1 for a port already taken.
func TestServeListenOCSPExitCodes(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "ca")
	runMinica := func(args ...string) (int, string) { return runIn(dir, args...) }
	if code, out := runMinica("init", "--cn", "Root", "--no-password"); code != 0 {
		t.Fatalf("init: exit %d\n%s", code, out)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, tt := range []struct {
		addr, want string
		code       int
	}{
		{"localhost:ocsp", `--listen-ocsp "localhost:ocsp"`, 2},
		{taken.Addr().String(), `listening on "` + taken.Addr().String() + `" (--listen-ocsp): `, 1},
	} {
		code, out := runMinica("serve", "--listen", "127.0.0.1:0", "--listen-ocsp", tt.addr)
		if code != tt.code || !strings.Contains(out, "minica: error: "+tt.want) {
			t.Errorf("--listen-ocsp %s: exit %d, output %q; want exit %d and %q", tt.addr, code, out, tt.code, tt.want)
		}
	}
}

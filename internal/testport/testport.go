// Package testport gives tests a TCP port of 127.0.0.1 to hand to a
// server they start, when the port must be known before the server runs
// (a redirect URI registered in advance, a validator told where to dial).
package testport

import (
	"net"
	"testing"
)

// Free returns a TCP port of 127.0.0.1 that was free a moment ago: another
// process may take it before the caller listens on it, so a caller whose
// server then fails to listen should retry with another.
func Free(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

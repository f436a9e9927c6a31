package main

import (
	"net"
	"net/http"
	"path/filepath"

	"github.com/rogpeppe/go-internal/testscript"
)

// crl-server DIR: serves the files of DIR (relative to $WORK) over HTTP on
// 127.0.0.1 until the script ends, with http.FileServer's ETag-less
// conditional GETs (Last-Modified), plus the faults /404, /500 and /hang
// (headers, then a body that never ends); sets $CRLSERVER to its URL and
// $CRLSERVER_ADDR to its address (a port in use).
func cmdCRLServer(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: crl-server DIR")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServer(http.Dir(filepath.Join(ts.Getenv("WORK"), args[0]))))
	mux.HandleFunc("/404", http.NotFound)
	mux.HandleFunc("/500", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(500)
		w.Write([]byte("<html><body>Internal Server Error</body></html>\n"))
	})
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte{0x30, 0x82})
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	ts.Defer(func() { srv.Close() })
	ts.Setenv("CRLSERVER", "http://"+ln.Addr().String())
	ts.Setenv("CRLSERVER_ADDR", ln.Addr().String())
}

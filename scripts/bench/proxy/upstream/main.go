// Command upstream is the application behind the proxies in
// scripts/bench/proxy.sh: it answers every request with a short body, and
// /headers with the request headers, one "Name: value" line each, sorted, so
// the script can check that the identity headers arrive.
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"slices"
	"strings"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	flag.Parse()
	log.Fatal(http.ListenAndServe(*listen, newHandler()))
}

// newHandler answers /headers with the sorted request headers and every
// other path with "ok\n".
func newHandler() http.Handler {
	body := []byte("ok\n")
	mux := http.NewServeMux()
	mux.HandleFunc("/headers", func(w http.ResponseWriter, r *http.Request) {
		lines := make([]string, 0, len(r.Header))
		for name, values := range r.Header {
			lines = append(lines, name+": "+strings.Join(values, ", "))
		}
		slices.Sort(lines)
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintln(w, strings.Join(lines, "\n"))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write(body)
	})
	return mux
}

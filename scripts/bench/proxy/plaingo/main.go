// Command plaingo is the reference point of scripts/bench/proxy.sh: Go's
// crypto/tls verifying client certificates against a CA file (no CRL: Go's
// TLS has none) and a stock httputil.ReverseProxy setting the client's CN
// and email as headers, keeping as many upstream connections alive as minica
// does. It shows what minica proxy costs beyond stock Go.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	upstream := flag.String("upstream", "", "upstream URL")
	cert := flag.String("cert", "", "server certificate (PEM)")
	key := flag.String("key", "", "server key (PEM)")
	ca := flag.String("ca", "", "CA certificates of the clients (PEM)")
	flag.Parse()
	srv, err := newServer(*listen, *upstream, *cert, *key, *ca)
	if err != nil {
		fmt.Fprintln(os.Stderr, "plaingo:", err)
		os.Exit(2)
	}
	log.Fatal(srv.ListenAndServeTLS("", ""))
}

func newServer(listen, upstream, certFile, keyFile, caFile string) (*http.Server, error) {
	target, err := url.Parse(upstream)
	if err != nil || target.Host == "" {
		return nil, fmt.Errorf("upstream %q: want http://HOST:PORT", upstream)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("loading server certificate: %w", err)
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("reading CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("CA file holds no certificate")
	}
	// The default transport keeps 2 idle connections per host: with 64
	// clients most requests would dial the upstream anew. minica keeps 256.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 1024, 256
	rp := &httputil.ReverseProxy{Transport: tr, Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(target)
		pr.Out.Host = pr.In.Host
		pr.SetXForwarded()
		pr.Out.Header.Del("X-SSL-Client-CN")
		pr.Out.Header.Del("X-SSL-Client-Email")
		if pr.In.TLS != nil && len(pr.In.TLS.PeerCertificates) > 0 {
			c := pr.In.TLS.PeerCertificates[0]
			pr.Out.Header.Set("X-SSL-Client-CN", c.Subject.CommonName)
			if len(c.EmailAddresses) > 0 {
				pr.Out.Header.Set("X-SSL-Client-Email", c.EmailAddresses[0])
			}
		}
	}}
	return &http.Server{
		Addr:    listen,
		Handler: rp,
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{cert},
			ClientAuth:   tls.RequireAndVerifyClientCert,
			ClientCAs:    pool,
			MinVersion:   tls.VersionTLS12,
		},
	}, nil
}

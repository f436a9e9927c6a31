package proxy_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"minica/crlsource"
	"minica/identity"
	"minica/proxy"
)

// readCerts reads every CERTIFICATE block of a PEM file.
func readCerts(path string) ([]*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var certs []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("no certificate")
	}
	return certs, nil
}

// This is how a command wires the proxy: files re-read on every reload,
// SIGHUP to reload, SIGTERM to drain and stop, metrics and health on a
// listener of their own.
func Example() {
	p, err := proxy.New(proxy.Config{
		Upstream:       "http://127.0.0.1:8080",
		LoadCA:         func() ([]*x509.Certificate, error) { return readCerts("ca.crt") },
		CRL:            crlsource.Files{"ca.crl"},
		LoadCert:       func() (tls.Certificate, error) { return tls.LoadX509KeyPair("app.crt", "app.key") },
		ReloadInterval: 5 * time.Second,
		Profile:        identity.ProfileApache,
		CustomHeaders:  []string{"X-User=email"},
		Log:            os.Stderr,
	})
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", ":8443")
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", p.MetricsHandler())
	mux.Handle("/health", p.HealthHandler())
	go http.ListenAndServe("127.0.0.1:9100", mux)

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGTERM)
	go func() {
		for sig := range sigs {
			if sig == syscall.SIGHUP {
				p.Reload() // logs and counts its own failures
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			p.Shutdown(ctx)
			cancel()
			return
		}
	}()
	if err := p.Serve(context.Background(), ln); err != nil {
		log.Fatal(err)
	}
}

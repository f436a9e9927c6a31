// Command ariclient is an ACME client that renews when renewal information
// (RFC 9773) says so, and at no other time: the interop tests of minica run
// it against `minica serve --acme` to show that a revocation or `minica acme
// renew-now` makes a client renew without being told. It is lego (as a
// library), which reads renewal information, unlike Debian's lego and certbot.
//
// It obtains a certificate for -domain with http-01 on 127.0.0.1:-http-port
// and writes it (the leaf, then the chain) to -out, then checks the
// certificate's renewal information every -interval, at most -checks times
// and until -deadline. When lego's ShouldRenewAt says the time has come, it
// obtains a new certificate that replaces the first (the order's
// "replaces"), writes it over -out, prints "renewed ..." and exits 0. It
// exits 1 when no renewal came, or on any error.
//
// Standard output has one line per step, which the tests read:
//
//	obtained SERIAL
//	check N: window START END retry-after DURATION: wait
//	renewed SERIAL replaces CERT-ID after N checks
//
// The EAB key ID and HMAC key come from -kid and -hmac or ARICLIENT_EAB_KID
// and ARICLIENT_EAB_HMAC; serve's HTTPS certificate is trusted through
// LEGO_CA_CERTIFICATES, as with the lego command.
package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/go-acme/lego/v4/certcrypto"
	"github.com/go-acme/lego/v4/certificate"
	"github.com/go-acme/lego/v4/challenge/http01"
	"github.com/go-acme/lego/v4/lego"
	"github.com/go-acme/lego/v4/registration"
)

type user struct {
	key crypto.PrivateKey
	reg *registration.Resource
}

func (u *user) GetEmail() string                        { return "" }
func (u *user) GetRegistration() *registration.Resource { return u.reg }
func (u *user) GetPrivateKey() crypto.PrivateKey        { return u.key }

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "ariclient:", err)
		os.Exit(1)
	}
}

func run() error {
	server := flag.String("server", "", "the ACME directory URL")
	kid := flag.String("kid", os.Getenv("ARICLIENT_EAB_KID"), "the EAB key ID")
	hmac := flag.String("hmac", os.Getenv("ARICLIENT_EAB_HMAC"), "the EAB HMAC key (base64url)")
	domain := flag.String("domain", "", "the name to get a certificate for")
	httpPort := flag.Int("http-port", 0, "the port of 127.0.0.1 where http-01 is answered")
	out := flag.String("out", "", "the file the certificate (and its chain) is written to")
	interval := flag.Duration("interval", 200*time.Millisecond, "the time between two checks of renewal information")
	checks := flag.Int("checks", 100, "the most checks of renewal information")
	deadline := flag.Duration("deadline", 30*time.Second, "the longest time spent checking")
	flag.Parse()
	if *server == "" || *domain == "" || *httpPort == 0 || *out == "" || *kid == "" || *hmac == "" {
		return errors.New("-server, -domain, -http-port, -out and an EAB key (-kid, -hmac) are needed")
	}

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	u := &user{key: key}
	cfg := lego.NewConfig(u)
	cfg.CADirURL = *server
	cfg.Certificate.KeyType = certcrypto.EC256
	client, err := lego.NewClient(cfg)
	if err != nil {
		return fmt.Errorf("reading the directory: %w", err)
	}
	if err := client.Challenge.SetHTTP01Provider(http01.NewProviderServer("127.0.0.1", strconv.Itoa(*httpPort))); err != nil {
		return err
	}
	if u.reg, err = client.Registration.RegisterWithExternalAccountBinding(registration.RegisterEABOptions{
		TermsOfServiceAgreed: true, Kid: *kid, HmacEncoded: *hmac}); err != nil {
		return fmt.Errorf("registering: %w", err)
	}

	res, err := client.Certificate.Obtain(certificate.ObtainRequest{Domains: []string{*domain}, Bundle: true})
	if err != nil {
		return fmt.Errorf("obtaining: %w", err)
	}
	cert, err := save(*out, res.Certificate)
	if err != nil {
		return err
	}
	fmt.Printf("obtained %x\n", cert.SerialNumber)

	stop := time.Now().Add(*deadline)
	for n := 1; n <= *checks && time.Now().Before(stop); n++ {
		time.Sleep(*interval)
		info, err := client.Certificate.GetRenewalInfo(certificate.RenewalInfoRequest{Cert: cert})
		if err != nil {
			return fmt.Errorf("reading renewal information: %w", err)
		}
		// lego decodes any answer, a problem document too, and a zero
		// window lies in the past: that would pass for "renew now".
		w := info.SuggestedWindow
		if w.Start.IsZero() || w.End.Before(w.Start) {
			return fmt.Errorf("check %d: renewal information without a window: %+v", n, w)
		}
		at := info.ShouldRenewAt(time.Now(), *interval)
		if at == nil {
			fmt.Printf("check %d: window %s %s retry-after %s: wait\n", n, w.Start.Format(time.RFC3339), w.End.Format(time.RFC3339), info.RetryAfter)
			continue
		}
		time.Sleep(time.Until(*at))
		id, err := certificate.MakeARICertID(cert)
		if err != nil {
			return err
		}
		res, err := client.Certificate.Obtain(certificate.ObtainRequest{Domains: []string{*domain}, Bundle: true, ReplacesCertID: id})
		if err != nil {
			return fmt.Errorf("renewing: %w", err)
		}
		renewed, err := save(*out, res.Certificate)
		if err != nil {
			return err
		}
		fmt.Printf("renewed %x replaces %s after %d checks\n", renewed.SerialNumber, id, n)
		return nil
	}
	return fmt.Errorf("no renewal after %d checks or %s", *checks, *deadline)
}

// save writes the PEM bundle to file atomically, so that a reader sees the
// old certificate or the new one, and returns its leaf.
func save(file string, bundle []byte) (*x509.Certificate, error) {
	certs, err := certcrypto.ParsePEMBundle(bundle)
	if err != nil {
		return nil, fmt.Errorf("the certificate obtained: %w", err)
	}
	tmp := filepath.Join(filepath.Dir(file), "."+filepath.Base(file)+".tmp")
	if err := os.WriteFile(tmp, bundle, 0o644); err != nil {
		return nil, err
	}
	return certs[0], os.Rename(tmp, file)
}

package main

import (
	"crypto/x509"
	"encoding/hex"
	"fmt"

	"github.com/urfave/cli/v2"

	"minica/ca"
)

// caFingerprintFlag is --ca-fingerprint of the commands that read a CA
// certificate which may have been downloaded from serve: proxy, agent and
// crl fetch.
func caFingerprintFlag() cli.Flag {
	return &cli.StringFlag{Name: "ca-fingerprint", Usage: "refuse --ca unless it is the CA of this `SHA256` fingerprint (and CAs issued under it), as 'minica inspect ca.crt' prints it on the CA host"}
}

// parseCAPin reads --ca-fingerprint: nil when it is not given.
func parseCAPin(c *cli.Context) ([]byte, error) {
	if !c.IsSet("ca-fingerprint") {
		return nil, nil
	}
	pin, err := ca.ParseFingerprint(c.String("ca-fingerprint"))
	if err != nil {
		return nil, usagef(c, "--ca-fingerprint %q: %v", c.String("ca-fingerprint"), err)
	}
	return pin, nil
}

// readPinnedCerts is readCertsFile, its certificates checked against pin
// by ca.CheckPinned unless pin is nil.
func readPinnedCerts(file string, pin []byte) ([]*x509.Certificate, error) {
	certs, err := readCertsFile(file)
	if err != nil || pin == nil {
		return certs, err
	}
	if err := ca.CheckPinned(certs, pin); err != nil {
		return nil, fmt.Errorf("reading certificates %q: %w", file, err)
	}
	return certs, nil
}

// hexOrEmpty is pin as the commands a config writes carry it: hex, or ""
// for no pin.
func hexOrEmpty(pin []byte) string {
	if pin == nil {
		return ""
	}
	return hex.EncodeToString(pin)
}

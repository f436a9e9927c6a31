package certlint

import (
	"fmt"
	"sort"
	"testing"

	zx509 "github.com/zmap/zcrypto/x509"
	"github.com/zmap/zlint/v3"
	"github.com/zmap/zlint/v3/lint"
)

// CertificateSources are the zlint sources certificates are checked against.
var CertificateSources = lint.SourceList{
	lint.RFC5280, lint.RFC5480, lint.RFC5891, lint.RFC8813, lint.RFC3279, lint.Community,
}

// RevocationListSources are the zlint sources CRLs are checked against.
var RevocationListSources = lint.SourceList{lint.RFC5280, lint.Community}

// CertificateFindings parses the DER certificate der and returns one line per
// lint that warned, errored or failed fatally, sorted by lint name. An error
// means der could not be parsed or the lint registry could not be built.
func CertificateFindings(der []byte) ([]string, error) {
	cert, err := zx509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing certificate for zlint: %w", err)
	}
	reg, err := registry(CertificateSources)
	if err != nil {
		return nil, err
	}
	return findings(zlint.LintCertificateEx(cert, reg)), nil
}

// RevocationListFindings parses the DER CRL der and returns one line per lint
// that warned, errored or failed fatally, sorted by lint name. An error means
// der could not be parsed or the lint registry could not be built.
func RevocationListFindings(der []byte) ([]string, error) {
	crl, err := zx509.ParseRevocationList(der)
	if err != nil {
		return nil, fmt.Errorf("parsing CRL for zlint: %w", err)
	}
	reg, err := registry(RevocationListSources)
	if err != nil {
		return nil, err
	}
	return findings(zlint.LintRevocationListEx(crl, reg)), nil
}

// Certificate reports every zlint finding for the DER certificate der with
// t.Errorf, and a parse failure with t.Errorf as well.
func Certificate(t testing.TB, der []byte) {
	t.Helper()
	report(t, "certificate", der, CertificateFindings)
}

// RevocationList reports every zlint finding for the DER CRL der with
// t.Errorf, and a parse failure with t.Errorf as well.
func RevocationList(t testing.TB, der []byte) {
	t.Helper()
	report(t, "CRL", der, RevocationListFindings)
}

func report(t testing.TB, what string, der []byte, run func([]byte) ([]string, error)) {
	t.Helper()
	found, err := run(der)
	if err != nil {
		t.Errorf("zlint %s: %v", what, err)
		return
	}
	for _, f := range found {
		t.Errorf("zlint %s: %s", what, f)
	}
}

func registry(sources lint.SourceList) (lint.Registry, error) {
	reg, err := lint.GlobalRegistry().Filter(lint.FilterOptions{IncludeSources: sources})
	if err != nil {
		return nil, fmt.Errorf("filtering zlint registry: %w", err)
	}
	return reg, nil
}

func findings(rs *zlint.ResultSet) []string {
	var out []string
	for name, res := range rs.Results {
		switch res.Status {
		case lint.Warn, lint.Error, lint.Fatal:
			line := fmt.Sprintf("%s: %s", name, res.Status)
			if res.Details != "" {
				line += ": " + res.Details
			}
			out = append(out, line)
		}
	}
	sort.Strings(out)
	return out
}

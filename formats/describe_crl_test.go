package formats_test

import (
	"bytes"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/json"
	"math/big"
	"reflect"
	"strings"
	"testing"
	"time"

	"minica/formats"
	"minica/internal/testca"
)

// TestDescribeCRLScope: a delta, indirect or scoped CRL is described as
// such, never as a plain one.
func TestDescribeCRLScope(t *testing.T) {
	ca := testca.New(t, "Scope Root")
	idp := func(critical bool, value ...byte) pkix.Extension {
		return pkix.Extension{Id: asn1.ObjectIdentifier{2, 5, 29, 28}, Critical: critical, Value: value}
	}
	uri := "http://crl.example.com/a.crl"
	dpName := append([]byte{0xa0, byte(len(uri) + 4), 0xa0, byte(len(uri) + 2), 0x86, byte(len(uri))}, uri...)
	tests := []struct {
		name      string
		exts      []pkix.Extension
		entryExts []pkix.Extension
		want      formats.CRLInfo // only the scope fields
		wantScope string          // the Scope line, "" for none
		wantDP    string          // the Distribution pt line
	}{
		{name: "plain"},
		{name: "delta", exts: []pkix.Extension{{Id: asn1.ObjectIdentifier{2, 5, 29, 27}, Critical: true, Value: []byte{0x02, 0x01, 0x04}}},
			want: formats.CRLInfo{Delta: true, BaseNumber: "4"}, wantScope: "delta CRL (only the changes since CRL 4)"},
		{name: "distribution point", exts: []pkix.Extension{idp(true, append([]byte{0x30, byte(len(dpName))}, dpName...)...)},
			want:   formats.CRLInfo{DistributionPoint: &formats.IssuingDistributionPoint{Critical: true, Names: []string{"URI:" + uri}}},
			wantDP: "URI:" + uri},
		{name: "only user certificates", exts: []pkix.Extension{idp(true, 0x30, 0x03, 0x81, 0x01, 0xff)},
			want:      formats.CRLInfo{DistributionPoint: &formats.IssuingDistributionPoint{Critical: true, OnlyUserCerts: true}},
			wantScope: "only user certificates"},
		{name: "only CA certificates", exts: []pkix.Extension{idp(false, 0x30, 0x03, 0x82, 0x01, 0xff)},
			want:      formats.CRLInfo{DistributionPoint: &formats.IssuingDistributionPoint{OnlyCACerts: true}},
			wantScope: "only CA certificates"},
		{name: "only some reasons", exts: []pkix.Extension{idp(true, 0x30, 0x04, 0x83, 0x02, 0x05, 0x60)},
			want:      formats.CRLInfo{DistributionPoint: &formats.IssuingDistributionPoint{Critical: true, OnlySomeReasons: []string{"keyCompromise", "cACompromise"}}},
			wantScope: "only reasons keyCompromise, cACompromise"},
		{name: "indirect", exts: []pkix.Extension{idp(true, 0x30, 0x03, 0x84, 0x01, 0xff)},
			want:      formats.CRLInfo{Indirect: true, DistributionPoint: &formats.IssuingDistributionPoint{Critical: true, IndirectCRL: true}},
			wantScope: "indirect CRL (may list other issuers' certificates)"},
		{name: "only attribute certificates", exts: []pkix.Extension{idp(true, 0x30, 0x03, 0x85, 0x01, 0xff)},
			want:      formats.CRLInfo{DistributionPoint: &formats.IssuingDistributionPoint{Critical: true, OnlyAttributeCerts: true}},
			wantScope: "only attribute certificates"},
		{name: "unreadable", exts: []pkix.Extension{idp(true, 0x05, 0x00)},
			want:      formats.CRLInfo{DistributionPoint: &formats.IssuingDistributionPoint{Critical: true, Invalid: true}},
			wantScope: "unreadable issuing distribution point"},
		{name: "entry names an issuer", entryExts: []pkix.Extension{{Id: asn1.ObjectIdentifier{2, 5, 29, 29}, Critical: true, Value: []byte{0x30, 0x00}}},
			want: formats.CRLInfo{Indirect: true}, wantScope: "indirect CRL (may list other issuers' certificates)"},
	}
	now := time.Now()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			der, err := x509.CreateRevocationList(rand.Reader, &x509.RevocationList{
				Number: big.NewInt(5), ThisUpdate: now, NextUpdate: now.Add(time.Hour), ExtraExtensions: tt.exts,
				RevokedCertificateEntries: []x509.RevocationListEntry{{SerialNumber: big.NewInt(42), RevocationTime: now, ExtraExtensions: tt.entryExts}},
			}, ca.Cert, ca.Key)
			if err != nil {
				t.Fatal(err)
			}
			d, err := formats.Describe(der, nil, now)
			if err != nil {
				t.Fatalf("Describe() error = %v", err)
			}
			got := formats.CRLInfo{Delta: d.CRL.Delta, BaseNumber: d.CRL.BaseNumber, Indirect: d.CRL.Indirect, DistributionPoint: d.CRL.DistributionPoint}
			if !reflect.DeepEqual(got, tt.want) {
				gotJSON, _ := json.Marshal(got)
				wantJSON, _ := json.Marshal(tt.want)
				t.Errorf("scope = %s; want %s", gotJSON, wantJSON)
			}
			var text bytes.Buffer
			if err := d.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			checkLine(t, text.String(), "Scope:", tt.wantScope)
			checkLine(t, text.String(), "Distribution pt:", tt.wantDP)
		})
	}
}

// checkLine checks the text line of label: absent when want is "".
func checkLine(t *testing.T, text, label, want string) {
	t.Helper()
	for line := range strings.Lines(text) {
		if v, ok := strings.CutPrefix(line, "  "+label); ok {
			if got := strings.TrimSpace(v); got != want {
				t.Errorf("%s %q; want %q", label, got, want)
			}
			return
		}
	}
	if want != "" {
		t.Errorf("no %s line; want %q in:\n%s", label, want, text)
	}
}

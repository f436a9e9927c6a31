package formats_test

import (
	"testing"

	"minica/formats"
)

func TestPEMType(t *testing.T) {
	tests := []struct {
		name, data string
		want       string
		wantOK     bool
	}{
		{name: "certificate", data: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", want: "CERTIFICATE", wantOK: true},
		{name: "text before", data: "Subject: x\n-----BEGIN NEW CERTIFICATE REQUEST-----\nAAAA\n-----END NEW CERTIFICATE REQUEST-----\n", want: "NEW CERTIFICATE REQUEST", wantOK: true},
		{name: "first of two", data: "-----BEGIN X509 CRL-----\nAAAA\n-----END X509 CRL-----\n-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", want: "X509 CRL", wantOK: true},
		{name: "truncated", data: "-----BEGIN CERTIFICATE-----\nAAAA\n"},
		{name: "DER", data: "\x30\x03\x02\x01\x01"},
		{name: "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := formats.PEMType([]byte(tt.data))
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("PEMType() = %q, %v; want %q, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

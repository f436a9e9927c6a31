package main

import (
	"encoding/pem"

	"minica/internal/regfile"
)

// readCRLFiles reads the --crl files for the proxy's LoadCRL: one file as
// it is, several as one PEM text (a DER file becomes a PEM block), which
// the proxy splits into the CRL of each CA.
func readCRLFiles(files []string) ([]byte, error) {
	var out []byte
	for _, file := range files {
		// A FIFO in the place of the CRL would hang every reload.
		data, err := regfile.ReadFile(file)
		if err != nil {
			return nil, &crlReadError{file: file, err: err}
		}
		if len(files) == 1 {
			return data, nil
		}
		if len(data) > 0 && data[0] == 0x30 { // DER
			data = pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: data})
		}
		out = append(out, data...)
		if len(out) > 0 && out[len(out)-1] != '\n' {
			out = append(out, '\n')
		}
	}
	return out, nil
}

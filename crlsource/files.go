package crlsource

import (
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"

	"minica/internal/regfile"
)

// Files is a Source of CRL files, read again at every Current: one file
// as it is, several as one PEM text (a DER file becomes a PEM block), for
// a reader that splits it into the CRL of each CA. Only regular files are
// read: a FIFO in the place of a CRL would hang every reload.
type Files []string

// Current reads the files; the error of one that cannot be read is a
// *FileError.
func (files Files) Current() ([]byte, error) {
	var out []byte
	for _, file := range files {
		data, err := regfile.ReadFile(file)
		if err != nil {
			return nil, &FileError{File: file, Err: err}
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

// FileError is a CRL file that could not be read.
type FileError struct {
	File string
	Err  error
}

// Error names the file once: the cause's own path is left out.
func (e *FileError) Error() string {
	err := e.Err
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Sprintf("reading CRL %q: %v", e.File, err)
}

func (e *FileError) Unwrap() error { return e.Err }

package formats

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestBERToDER(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want []byte
	}{
		{"DER stays", []byte{0x30, 0x03, 0x02, 0x01, 0x05}, []byte{0x30, 0x03, 0x02, 0x01, 0x05}},
		{"indefinite sequence", []byte{0x30, 0x80, 0x02, 0x01, 0x05, 0x00, 0x00}, []byte{0x30, 0x03, 0x02, 0x01, 0x05}},
		{"nested indefinite", []byte{0x30, 0x80, 0x30, 0x80, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00}, []byte{0x30, 0x04, 0x30, 0x02, 0x05, 0x00}},
		{"chunked OCTET STRING", []byte{0x24, 0x80, 0x04, 0x02, 'a', 'b', 0x04, 0x01, 'c', 0x00, 0x00}, []byte{0x04, 0x03, 'a', 'b', 'c'}},
		{"chunked with definite length", []byte{0x24, 0x06, 0x04, 0x01, 'a', 0x04, 0x01, 'b'}, []byte{0x04, 0x02, 'a', 'b'}},
		{"context tag indefinite", []byte{0xa0, 0x80, 0x04, 0x01, 'x', 0x00, 0x00}, []byte{0xa0, 0x03, 0x04, 0x01, 'x'}},
		{"high tag number", []byte{0x1f, 0x81, 0x01, 0x01, 0xff}, []byte{0x1f, 0x81, 0x01, 0x01, 0xff}},
		{"long form length", append([]byte{0x04, 0x81, 0x80}, bytes.Repeat([]byte{7}, 0x80)...), append([]byte{0x04, 0x81, 0x80}, bytes.Repeat([]byte{7}, 0x80)...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := berToDER(tt.in)
			if err != nil || !bytes.Equal(got, tt.want) {
				t.Errorf("berToDER() = % x, %v; want % x", got, err, tt.want)
			}
		})
	}
}

func TestBERToDERErrors(t *testing.T) {
	deep := bytes.Repeat([]byte{0x30, 0x80}, maxBERDepth+2)
	tests := []struct {
		name    string
		in      []byte
		wantIs  error
		wantErr string
	}{
		{"empty", nil, ErrTruncated, "truncated input: BER element missing"},
		{"no end-of-contents", []byte{0x30, 0x80, 0x05, 0x00}, ErrTruncated, "truncated input: BER element without end-of-contents"},
		{"short content", []byte{0x04, 0x05, 0x01}, ErrTruncated, "truncated input: BER element announces 5 bytes, only 1 present"},
		{"length cut short", []byte{0x04, 0x82, 0x01}, ErrTruncated, "truncated input: BER length cut short"},
		{"missing length", []byte{0x04}, ErrTruncated, "truncated input: BER length missing"},
		{"tag cut short", []byte{0x1f, 0x81}, ErrTruncated, "truncated input: BER tag cut short"},
		{"tag too large", []byte{0x1f, 0x81, 0x81, 0x81, 0x81, 0x81, 0x01}, ErrMalformed, "malformed input: BER tag number too large"},
		{"huge length", []byte{0x04, 0x85, 1, 1, 1, 1, 1}, ErrMalformed, "malformed input: BER length of 5 octets"},
		{"indefinite primitive", []byte{0x04, 0x80, 0x00, 0x00}, ErrMalformed, "malformed input: indefinite length on a primitive BER element"},
		{"chunk of wrong type", []byte{0x24, 0x03, 0x02, 0x01, 0x00}, ErrMalformed, "malformed input: a chunked OCTET STRING holds tag 0x2"},
		{"trailing", []byte{0x05, 0x00, 0x05}, ErrMalformed, "malformed input: 1 byte of trailing data after the BER structure"},
		{"too deep", deep, ErrMalformed, "malformed input: BER nesting too deep"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := berToDER(tt.in)
			if !errors.Is(err, tt.wantIs) || err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Fatalf("berToDER() error = %v; want %v starting with %q", err, tt.wantIs, tt.wantErr)
			}
		})
	}
}

package revoke

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/crypto/cryptobyte"
)

// FuzzParseEntries reaches the entry parser and the serial table directly,
// which FuzzParseCRL rarely does because mutated CRLs fail their signature.
// Every record of an accepted list must be found again by its serial.
func FuzzParseEntries(f *testing.F) {
	names, err := filepath.Glob(filepath.Join("testdata", "*.crl"))
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range names {
		der, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		fields, err := splitCRL(der)
		if err != nil {
			f.Fatal(err)
		}
		f.Add([]byte(fields.entries))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		table, err := parseEntries(cryptobyte.String(data), false)
		if err != nil {
			return
		}
		for i := range table.len() {
			serial := table.serial(i)
			if got := table.find(serial); got != i {
				t.Fatalf("find(%x) = %d; want %d", serial, got, i)
			}
		}
	})
}

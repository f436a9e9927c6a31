package revoke

import (
	"bytes"
	"fmt"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

var oidCertificateIssuer = []byte{0x55, 0x1d, 0x1d} // 2.5.29.29

// parseEntries reads revokedCertificates into a sorted serial table. A first
// pass counts the entries and finds the widest serial so that the table is
// allocated once at its exact size; the second fills it. removeFromCRL is
// taken only in a delta CRL.
func parseEntries(list cryptobyte.String, delta bool) (serialTable, error) {
	n, width := 0, 0
	for s := list; !s.Empty(); n++ {
		var entry, serial cryptobyte.String
		if !s.ReadASN1(&entry, cbasn1.SEQUENCE) || !entry.ReadASN1(&serial, cbasn1.INTEGER) {
			return serialTable{}, malformed("entry %d: invalid serial", n)
		}
		if err := checkSerial(serial); err != nil {
			return serialTable{}, malformed("entry %d: %v", n, err)
		}
		width = max(width, len(serial))
	}
	t := serialTable{width: width, data: make([]byte, n*(width+recordTail))}
	for i := 0; !list.Empty(); i++ {
		var entry, serial cryptobyte.String
		list.ReadASN1(&entry, cbasn1.SEQUENCE) // checked by the first pass
		entry.ReadASN1(&serial, cbasn1.INTEGER)
		at, ok := readTime(&entry)
		if !ok {
			return serialTable{}, malformed("entry %d: invalid revocation date", i)
		}
		reason, err := parseEntryExtensions(entry, delta)
		if err != nil {
			return serialTable{}, malformed("entry %d: %v", i, err)
		}
		t.set(i, serial, at, reason)
	}
	if i := t.sortAndCheck(); i >= 0 {
		return serialTable{}, malformed("serial %x listed twice", t.serial(i))
	}
	return t, nil
}

// checkSerial checks that serial holds the minimal content octets of a DER
// INTEGER of reasonable size.
func checkSerial(serial []byte) error {
	switch {
	case len(serial) == 0:
		return fmt.Errorf("empty serial")
	case len(serial) > maxParsedSerial:
		return fmt.Errorf("serial longer than %d octets", maxParsedSerial)
	case len(serial) > 1 && (serial[0] == 0 && serial[1]&0x80 == 0 || serial[0] == 0xff && serial[1]&0x80 != 0):
		return fmt.Errorf("serial %x not minimally encoded", serial)
	}
	return nil
}

// parseEntryExtensions reads the optional crlEntryExtensions that follow an
// entry's revocation date and returns its reason code.
func parseEntryExtensions(entry cryptobyte.String, delta bool) (Reason, error) {
	if entry.Empty() {
		return Unspecified, nil
	}
	var exts cryptobyte.String
	if !entry.ReadASN1(&exts, cbasn1.SEQUENCE) || !entry.Empty() {
		return 0, fmt.Errorf("invalid entry extensions")
	}
	reason, sawReason := Unspecified, false
	for !exts.Empty() {
		oid, critical, value, ok := readExtension(&exts)
		if !ok {
			return 0, fmt.Errorf("invalid entry extension")
		}
		switch {
		case bytes.Equal(oid, oidReasonCode):
			var code int64
			if sawReason || !value.ReadASN1Int64WithTag(&code, cbasn1.ENUM) || !value.Empty() ||
				!Reason(code).Valid() || Reason(code) == RemoveFromCRL && !delta {
				return 0, fmt.Errorf("invalid reason code")
			}
			reason, sawReason = Reason(code), true
		case bytes.Equal(oid, oidCertificateIssuer):
			return 0, fmt.Errorf("indirect CRLs are not supported")
		case critical:
			return 0, fmt.Errorf("unsupported critical extension %s", oidString(oid))
		}
	}
	return reason, nil
}

package revoke_test

import (
	"cmp"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"math/big"
	"slices"
	"testing"
	"time"

	"minica/internal/certlint"
	"minica/internal/testca"
	"minica/revoke"
)

// crlSpec describes a CRL for signCRL: a complete CRL, or with base set a
// delta CRL against the complete CRL numbered base.
type crlSpec struct {
	number, base int64
	thisUpdate   time.Time     // zero: testNow
	ttl          time.Duration // zero: a week
	freshest     []string
	entries      []revoke.Entry
}

// params returns the Params of s for ca.
func (s crlSpec) params(ca *testca.CA) revoke.Params {
	p := revoke.Params{Issuer: ca.Cert, Signer: ca.Key, Number: big.NewInt(s.number),
		ThisUpdate: s.thisUpdate, FreshestCRL: s.freshest}
	if p.ThisUpdate.IsZero() {
		p.ThisUpdate = testNow
	}
	p.NextUpdate = p.ThisUpdate.Add(cmp.Or(s.ttl, 7*24*time.Hour))
	if s.base != 0 {
		p.DeltaBase = big.NewInt(s.base)
	}
	return p
}

// signCRL builds the CRL s describes, signed by ca, as DER.
func signCRL(t testing.TB, ca *testca.CA, s crlSpec) []byte {
	t.Helper()
	return buildOrFatal(t, s.params(ca), s.entries)
}

// pemCRLs encodes DER CRLs as one PEM file.
func pemCRLs(ders ...[]byte) []byte {
	var out []byte
	for _, der := range ders {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: der})...)
	}
	return out
}

// revokedAt returns an entry for serial with reason r, revoked an hour
// before testNow.
func revokedAt(serial *big.Int, r revoke.Reason) revoke.Entry {
	return revoke.Entry{Serial: serial, RevokedAt: testNow.Add(-time.Hour), Reason: r}
}

// parseDeltaOrFatal parses the delta CRL der of ca.
func parseDeltaOrFatal(t testing.TB, der []byte, ca *testca.CA) *revoke.CRL {
	t.Helper()
	crl, err := revoke.ParseDelta(der, ca.Cert)
	if err != nil {
		t.Fatalf("ParseDelta() error = %v", err)
	}
	return crl
}

// sameEntries fails t unless got lists want, in order.
func sameEntries(t *testing.T, what string, got *revoke.CRL, want []revoke.Entry) {
	t.Helper()
	list := slices.Collect(got.Entries())
	if len(list) != len(want) {
		t.Fatalf("%s: %d entries %v; want %d %v", what, len(list), list, len(want), want)
	}
	for i, e := range list {
		if !sameEntry(e, want[i]) {
			t.Errorf("%s: entry %d = %v; want %v", what, i, e, want[i])
		}
	}
}

// sameEntry reports whether a and b are the same entry, or both the zero
// Entry.
func sameEntry(a, b revoke.Entry) bool {
	if a.Serial == nil || b.Serial == nil {
		return a.Serial == b.Serial && a.RevokedAt.IsZero() && b.RevokedAt.IsZero() && a.Reason == b.Reason
	}
	return a.Serial.Cmp(b.Serial) == 0 && a.RevokedAt.Equal(b.RevokedAt) && a.Reason == b.Reason
}

var (
	oidDeltaCRLIndicator = asn1.ObjectIdentifier{2, 5, 29, 27}
	oidFreshestCRL       = asn1.ObjectIdentifier{2, 5, 29, 46}
)

// TestDeltaRoundTrip builds a delta CRL and reads it back: its number, base
// and entries, removeFromCRL among them; crypto/x509 sees the critical
// delta CRL indicator, zlint finds nothing, and ParseCRL and CRLNumber
// refuse it as no complete CRL.
func TestDeltaRoundTrip(t *testing.T) {
	ca := newCA(t, "Delta Root", testca.NewKey(t), testNow)
	big158 := new(big.Int).Lsh(big.NewInt(1), 158)
	entries := []revoke.Entry{
		revokedAt(big.NewInt(7), revoke.KeyCompromise),
		revokedAt(big.NewInt(0x80), revoke.RemoveFromCRL),
		revokedAt(big158, revoke.CertificateHold),
	}
	spec := crlSpec{number: 9, base: 5, ttl: time.Hour, entries: entries}
	der := signCRL(t, ca, spec)
	d := parseDeltaOrFatal(t, der, ca)
	if d.Number().Int64() != 9 || d.DeltaBase() == nil || d.DeltaBase().Int64() != 5 {
		t.Errorf("Number, DeltaBase = %v, %v; want 9, 5", d.Number(), d.DeltaBase())
	}
	if !d.ThisUpdate().Equal(testNow) || !d.NextUpdate().Equal(testNow.Add(time.Hour)) {
		t.Errorf("ThisUpdate, NextUpdate = %v, %v; want %v, %v", d.ThisUpdate(), d.NextUpdate(), testNow, testNow.Add(time.Hour))
	}
	if d.Len() != 3 || d.Delta() != nil || d.Complete() != d {
		t.Errorf("Len, Delta, Complete = %d, %v, %p; want 3, nil, %p", d.Len(), d.Delta(), d.Complete(), d)
	}
	sameEntries(t, "delta", d, entries)
	if e, ok := d.Lookup(big.NewInt(0x80)); !ok || e.Reason != revoke.RemoveFromCRL {
		t.Errorf("Lookup(0x80) = %v, %v; want the removeFromCRL entry of a delta read alone", e, ok)
	}
	d.DeltaBase().SetInt64(1) // a copy
	if d.DeltaBase().Int64() != 5 {
		t.Errorf("DeltaBase() = %v after changing a result; want 5", d.DeltaBase())
	}

	std, err := x509.ParseRevocationList(der)
	if err != nil {
		t.Fatalf("x509.ParseRevocationList() error = %v", err)
	}
	i := slices.IndexFunc(std.Extensions, func(e pkix.Extension) bool { return e.Id.Equal(oidDeltaCRLIndicator) })
	var base *big.Int
	if i < 0 || !std.Extensions[i].Critical {
		t.Fatalf("extensions %v; want a critical delta CRL indicator", std.Extensions)
	}
	if rest, err := asn1.Unmarshal(std.Extensions[i].Value, &base); err != nil || len(rest) != 0 || base.Int64() != 5 {
		t.Errorf("delta CRL indicator = %v (%v); want 5", base, err)
	}
	if std.Number.Int64() != 9 {
		t.Errorf("x509 Number = %v; want 9", std.Number)
	}
	certlint.RevocationList(t, der)
	opensslVerifies(t, ca, der)

	const refused = "revoke: not a complete CRL for client certificates: delta CRL (deltaCRLIndicator, base CRL 5)"
	if _, err := revoke.ParseCRL(der, ca.Cert); !errors.Is(err, revoke.ErrIncomplete) || err.Error() != refused {
		t.Errorf("ParseCRL(delta) error = %v; want %q", err, refused)
	}
	if n, err := revoke.CRLNumber(der, ca.Cert); !errors.Is(err, revoke.ErrIncomplete) || err.Error() != refused {
		t.Errorf("CRLNumber(delta) = %v, %v; want %q", n, err, refused)
	}
	other := testca.New(t, "Delta Other")
	if _, err := revoke.ParseDelta(der, other.Cert); !errors.Is(err, revoke.ErrWrongIssuer) {
		t.Errorf("ParseDelta(another CA) error = %v; want ErrWrongIssuer", err)
	}
}

// TestParseDeltaRefusesComplete: a complete CRL is no delta.
func TestParseDeltaRefusesComplete(t *testing.T) {
	ca := newCA(t, "Delta Complete Root", testca.NewKey(t), testNow)
	der := signCRL(t, ca, crlSpec{number: 5, entries: []revoke.Entry{revokedAt(big.NewInt(7), revoke.Superseded)}})
	const want = "revoke: not a delta CRL: no delta CRL indicator (CRL number 5)"
	if d, err := revoke.ParseDelta(der, ca.Cert); !errors.Is(err, revoke.ErrNotDelta) || err.Error() != want || d != nil {
		t.Errorf("ParseDelta(complete) = %v, %v; want nil, %q", d, err, want)
	}
}

// distributionPoint is RFC 5280's DistributionPoint, as crypto/x509 reads
// the CRL distribution points of a certificate.
type distributionPoint struct {
	Name struct {
		FullName []asn1.RawValue `asn1:"optional,tag:0"`
	} `asn1:"optional,tag:0"`
	Reason    asn1.BitString `asn1:"optional,tag:1"`
	CRLIssuer asn1.RawValue  `asn1:"optional,tag:2"`
}

// TestFreshestCRLExtension: a complete CRL names where its deltas are, in
// the non-critical freshest CRL extension, with one distribution point of
// every URL; zlint finds nothing.
func TestFreshestCRLExtension(t *testing.T) {
	ca := newCA(t, "Freshest Root", testca.NewKey(t), testNow)
	urls := []string{"http://crl.example.com/delta.crl", "http://crl2.example.com/root/delta.crl"}
	der := signCRL(t, ca, crlSpec{number: 5, freshest: urls, entries: sampleEntries(testNow)[:2]})
	if _, err := revoke.ParseCRL(der, ca.Cert); err != nil {
		t.Fatalf("ParseCRL() error = %v; want a complete CRL", err)
	}
	std, err := x509.ParseRevocationList(der)
	if err != nil {
		t.Fatalf("x509.ParseRevocationList() error = %v", err)
	}
	i := slices.IndexFunc(std.Extensions, func(e pkix.Extension) bool { return e.Id.Equal(oidFreshestCRL) })
	if i < 0 || std.Extensions[i].Critical {
		t.Fatalf("extensions %v; want a non-critical freshest CRL extension", std.Extensions)
	}
	var dps []distributionPoint
	if rest, err := asn1.Unmarshal(std.Extensions[i].Value, &dps); err != nil || len(rest) != 0 || len(dps) != 1 {
		t.Fatalf("freshest CRL = %v, %v; want one distribution point", dps, err)
	}
	var got []string
	for _, n := range dps[0].Name.FullName {
		if n.Class != asn1.ClassContextSpecific || n.Tag != 6 {
			t.Errorf("general name of class %d tag %d; want a uniformResourceIdentifier [6]", n.Class, n.Tag)
		}
		got = append(got, string(n.Bytes))
	}
	if !slices.Equal(got, urls) {
		t.Errorf("freshest CRL URLs = %q; want %q", got, urls)
	}
	certlint.RevocationList(t, der)
	opensslVerifies(t, ca, der)
}

// TestBuildDeltaRefusals: Build keeps removeFromCRL to delta CRLs, a base
// number positive and below the CRL's, the freshest CRL extension to
// complete CRLs, and its URLs to non-empty ASCII; it writes nothing then.
func TestBuildDeltaRefusals(t *testing.T) {
	ca := newCA(t, "Delta Refusal Root", testca.NewKey(t), testNow)
	lift := []revoke.Entry{revokedAt(big.NewInt(5), revoke.RemoveFromCRL)}
	tests := []struct {
		name    string
		spec    crlSpec
		base    *big.Int // overrides spec.base
		wantErr string
	}{
		{name: "removeFromCRL in a complete CRL", spec: crlSpec{number: 6, entries: lift},
			wantErr: "building CRL: serial 5: reason removeFromCRL is only valid in delta CRLs"},
		{name: "base equal to the number", spec: crlSpec{number: 6, base: 6},
			wantErr: "building CRL: delta CRL base 6 is not positive and below the CRL number 6"},
		{name: "base above the number", spec: crlSpec{number: 6, base: 7, entries: lift},
			wantErr: "building CRL: delta CRL base 7 is not positive and below the CRL number 6"},
		{name: "base zero", spec: crlSpec{number: 6}, base: big.NewInt(0),
			wantErr: "building CRL: delta CRL base 0 is not positive and below the CRL number 6"},
		{name: "base negative", spec: crlSpec{number: 6, base: -1},
			wantErr: "building CRL: delta CRL base -1 is not positive and below the CRL number 6"},
		{name: "freshest CRL on a delta", spec: crlSpec{number: 6, base: 5, freshest: []string{"http://crl.example.com/d.crl"}},
			wantErr: "building CRL: a delta CRL carries no freshest CRL extension (RFC 5280 section 5.2.6)"},
		{name: "empty freshest CRL URL", spec: crlSpec{number: 6, freshest: []string{"http://crl.example.com/d.crl", ""}},
			wantErr: `building CRL: freshest CRL URL 2 "" is not a non-empty ASCII string (IA5String)`},
		{name: "non-ASCII freshest CRL URL", spec: crlSpec{number: 6, freshest: []string{"http://bücher.example/d.crl"}},
			wantErr: `building CRL: freshest CRL URL 1 "http://bücher.example/d.crl" is not a non-empty ASCII string (IA5String)`},
		{name: "freshest CRL URL not UTF-8", spec: crlSpec{number: 6, freshest: []string{"http://x.example/\xff"}},
			wantErr: `building CRL: freshest CRL URL 1 "http://x.example/\xff" is not a non-empty ASCII string (IA5String)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.spec.params(ca)
			if tt.base != nil {
				p.DeltaBase = tt.base
			}
			der, err := revoke.Build(p, slices.Values(tt.spec.entries))
			if err == nil || err.Error() != tt.wantErr || der != nil {
				t.Fatalf("Build() = %d bytes, %v; want nothing, %q", len(der), err, tt.wantErr)
			}
		})
	}
	// The same removeFromCRL entry is taken in a delta CRL.
	if _, err := revoke.Build(crlSpec{number: 6, base: 5}.params(ca), slices.Values(lift)); err != nil {
		t.Errorf("Build(delta with removeFromCRL) error = %v", err)
	}
}

// deltaCase is a CRL set for the WithDelta tests: a CA with its complete
// CRL number 5 and a delta CRL number 6 against it.
type deltaCase struct {
	ca, other           *testca.CA
	baseDER, deltaDER   []byte
	baseList, deltaList []revoke.Entry
}

// Serials of the WithDelta tests.
var (
	onlyBase   = big.NewInt(7)
	inBoth     = big.NewInt(0x2a)
	onlyDelta  = big.NewInt(0x30)
	alsoDelta  = big.NewInt(0x31)
	heldLifted = big.NewInt(0x80)
	liftAbsent = big.NewInt(0x99)
	wideBase   = new(big.Int).Lsh(big.NewInt(1), 158)
	nowhere    = big.NewInt(0x2b)
)

func newDeltaCase(t *testing.T) *deltaCase {
	dc := &deltaCase{
		ca:    newCA(t, "WithDelta Root", testca.NewKey(t), testNow),
		other: newCA(t, "WithDelta Other", testca.NewKey(t), testNow),
		baseList: []revoke.Entry{
			revokedAt(onlyBase, revoke.KeyCompromise),
			revokedAt(inBoth, revoke.Superseded),
			revokedAt(heldLifted, revoke.CertificateHold),
			revokedAt(wideBase, revoke.Unspecified),
		},
	}
	later := testNow.Add(30 * time.Minute)
	dc.deltaList = []revoke.Entry{
		{Serial: inBoth, RevokedAt: later, Reason: revoke.AffiliationChanged},
		{Serial: onlyDelta, RevokedAt: later, Reason: revoke.KeyCompromise},
		{Serial: alsoDelta, RevokedAt: later, Reason: revoke.Unspecified},
		{Serial: heldLifted, RevokedAt: later, Reason: revoke.RemoveFromCRL},
		{Serial: liftAbsent, RevokedAt: later, Reason: revoke.RemoveFromCRL},
	}
	dc.baseDER = signCRL(t, dc.ca, crlSpec{number: 5, ttl: 7 * 24 * time.Hour, entries: dc.baseList})
	dc.deltaDER = signCRL(t, dc.ca, crlSpec{number: 6, base: 5, thisUpdate: testNow.Add(time.Hour), ttl: 24 * time.Hour, entries: dc.deltaList})
	return dc
}

// TestWithDelta applies a delta CRL to its complete CRL: the entries of
// each, the delta's winning, a hold lifted, a lift of nothing ignored;
// the result has the delta's number and thisUpdate, the earlier
// nextUpdate, and the complete CRL is unchanged.
func TestWithDelta(t *testing.T) {
	dc := newDeltaCase(t)
	base := parseOrFatal(t, dc.baseDER, dc.ca.Cert)
	delta := parseDeltaOrFatal(t, dc.deltaDER, dc.ca)
	got, err := base.WithDelta(delta)
	if err != nil {
		t.Fatalf("WithDelta() error = %v", err)
	}
	tests := []struct {
		name   string
		serial *big.Int
		want   revoke.Entry // the entry Lookup returns; zero: not revoked
	}{
		{name: "revoked only in the base", serial: onlyBase, want: dc.baseList[0]},
		{name: "revoked only in the delta", serial: onlyDelta, want: dc.deltaList[1]},
		{name: "in both, the delta's reason wins", serial: inBoth, want: dc.deltaList[0]},
		{name: "a 20-octet serial of the base", serial: wideBase, want: dc.baseList[3]},
		{name: "a hold of the base lifted by removeFromCRL", serial: heldLifted},
		{name: "removeFromCRL of a serial the base does not list", serial: liftAbsent},
		{name: "listed nowhere", serial: nowhere},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			revoked := tt.want.Serial != nil
			if got.IsRevoked(tt.serial) != revoked {
				t.Errorf("IsRevoked(%x) = %v; want %v", tt.serial, !revoked, revoked)
			}
			if e, ok := got.Lookup(tt.serial); ok != revoked || !sameEntry(e, tt.want) {
				t.Errorf("Lookup(%x) = %v, %v; want %v, %v", tt.serial, e, ok, tt.want, revoked)
			}
			if r, ok := got.ReasonOf(tt.serial); ok != revoked || revoked && r != tt.want.Reason {
				t.Errorf("ReasonOf(%x) = %v, %v; want %v, %v", tt.serial, r, ok, tt.want.Reason, revoked)
			}
			if n := testing.AllocsPerRun(10, func() { got.ReasonOf(tt.serial) }); n != 0 {
				t.Errorf("ReasonOf allocates %v times; want none", n)
			}
		})
	}
	sameEntries(t, "with delta", got, []revoke.Entry{
		dc.baseList[0], dc.deltaList[0], dc.deltaList[1], dc.deltaList[2], dc.baseList[3],
	})
	if got.Len() != 5 {
		t.Errorf("Len() = %d; want 5", got.Len())
	}
	if got.Number().Int64() != 6 || !got.ThisUpdate().Equal(testNow.Add(time.Hour)) ||
		!got.NextUpdate().Equal(testNow.Add(25*time.Hour)) {
		t.Errorf("Number, ThisUpdate, NextUpdate = %v, %v, %v; want the delta's: 6, %v, %v",
			got.Number(), got.ThisUpdate(), got.NextUpdate(), testNow.Add(time.Hour), testNow.Add(25*time.Hour))
	}
	if got.Delta() != delta || got.DeltaBase() != nil || got.Issuer() != dc.ca.Cert {
		t.Errorf("Delta, DeltaBase, Issuer = %p, %v, %v; want %p, nil, the CA", got.Delta(), got.DeltaBase(), got.Issuer().Subject, delta)
	}
	checkUnchanged(t, base, dc.baseList)
	checkUnchanged(t, got.Complete(), dc.baseList)
	sameEntries(t, "delta after WithDelta", delta, dc.deltaList)
}

// checkUnchanged fails t unless c is the complete CRL number 5 of
// newDeltaCase, without a delta.
func checkUnchanged(t *testing.T, c *revoke.CRL, list []revoke.Entry) {
	t.Helper()
	if c.Number().Int64() != 5 || !c.ThisUpdate().Equal(testNow) || !c.NextUpdate().Equal(testNow.Add(7*24*time.Hour)) ||
		c.Len() != len(list) || c.Delta() != nil || !c.IsRevoked(heldLifted) || c.IsRevoked(onlyDelta) {
		t.Errorf("complete CRL = number %v, %v to %v, %d entries, delta %p, hold %v, delta-only %v; want number 5 unchanged",
			c.Number(), c.ThisUpdate(), c.NextUpdate(), c.Len(), c.Delta(), c.IsRevoked(heldLifted), c.IsRevoked(onlyDelta))
	}
	sameEntries(t, "complete", c, list)
}

// TestWithDeltaEntriesStop: a loop over the merged entries may stop at any
// entry.
func TestWithDeltaEntriesStop(t *testing.T) {
	dc := newDeltaCase(t)
	got, err := parseOrFatal(t, dc.baseDER, dc.ca.Cert).WithDelta(parseDeltaOrFatal(t, dc.deltaDER, dc.ca))
	if err != nil {
		t.Fatal(err)
	}
	for stop := range 5 {
		n := 0
		for range got.Entries() {
			if n == stop {
				break
			}
			n++
		}
		if n != stop {
			t.Errorf("stopped after %d entries; want %d", n, stop)
		}
	}
}

// TestWithDeltaNextUpdate: the result expires with the earlier of the two.
func TestWithDeltaNextUpdate(t *testing.T) {
	ca := newCA(t, "NextUpdate Root", testca.NewKey(t), testNow)
	base := parseOrFatal(t, signCRL(t, ca, crlSpec{number: 5, ttl: 2 * time.Hour}), ca.Cert)
	delta := parseDeltaOrFatal(t, signCRL(t, ca, crlSpec{number: 6, base: 5, ttl: 24 * time.Hour}), ca)
	got, err := base.WithDelta(delta)
	if err != nil {
		t.Fatal(err)
	}
	if want := testNow.Add(2 * time.Hour); !got.NextUpdate().Equal(want) {
		t.Errorf("NextUpdate() = %v; want the complete CRL's %v", got.NextUpdate(), want)
	}
}

// TestWithDeltaReplaces: a second delta replaces the first, applied to the
// complete CRL alone.
func TestWithDeltaReplaces(t *testing.T) {
	dc := newDeltaCase(t)
	base := parseOrFatal(t, dc.baseDER, dc.ca.Cert)
	first, err := base.WithDelta(parseDeltaOrFatal(t, dc.deltaDER, dc.ca))
	if err != nil {
		t.Fatal(err)
	}
	secondList := []revoke.Entry{revokedAt(nowhere, revoke.CessationOfOperation)}
	second := parseDeltaOrFatal(t, signCRL(t, dc.ca, crlSpec{number: 7, base: 5, entries: secondList}), dc.ca)
	got, err := first.WithDelta(second)
	if err != nil {
		t.Fatalf("WithDelta(second) error = %v", err)
	}
	if got.Delta() != second || got.Number().Int64() != 7 || got.Len() != 5 {
		t.Errorf("Delta, Number, Len = %p, %v, %d; want %p, 7, 5", got.Delta(), got.Number(), got.Len(), second)
	}
	// The base's hold stands again, and the first delta's entries are gone.
	sameEntries(t, "second delta", got, []revoke.Entry{
		dc.baseList[0], dc.baseList[1], secondList[0], dc.baseList[2], dc.baseList[3],
	})
	if got.IsRevoked(onlyDelta) || !got.IsRevoked(heldLifted) {
		t.Errorf("IsRevoked(first delta's) = %v, IsRevoked(held) = %v; want false, true", got.IsRevoked(onlyDelta), got.IsRevoked(heldLifted))
	}
	if first.Delta().Number().Int64() != 6 || first.Len() != 5 {
		t.Errorf("first = delta %v, %d entries; want delta 6 with 5 entries, unchanged", first.Delta().Number(), first.Len())
	}
}

// TestWithDeltaMismatch: a delta applies only to a complete CRL of its CA
// with base <= complete < delta; otherwise nothing is returned.
func TestWithDeltaMismatch(t *testing.T) {
	dc := newDeltaCase(t)
	base := parseOrFatal(t, dc.baseDER, dc.ca.Cert)
	delta := func(ca *testca.CA, number, baseNumber int64) *revoke.CRL {
		return parseDeltaOrFatal(t, signCRL(t, ca, crlSpec{number: number, base: baseNumber}), ca)
	}
	tests := []struct {
		name    string
		base, d *revoke.CRL
		wantIs  error
		wantErr string
	}{
		{name: "against a later base", base: base, d: delta(dc.ca, 8, 6), wantIs: revoke.ErrDeltaMismatch,
			wantErr: "revoke: delta CRL does not apply to the complete CRL: the delta CRL (number 8) lists the changes since CRL 6, later than the complete CRL (number 5)"},
		{name: "as old as the complete CRL", base: base, d: delta(dc.ca, 5, 4), wantIs: revoke.ErrDeltaMismatch,
			wantErr: "revoke: delta CRL does not apply to the complete CRL: the delta CRL (number 5) is not newer than the complete CRL (number 5)"},
		{name: "older than the complete CRL", base: base, d: delta(dc.ca, 4, 3), wantIs: revoke.ErrDeltaMismatch,
			wantErr: "revoke: delta CRL does not apply to the complete CRL: the delta CRL (number 4) is not newer than the complete CRL (number 5)"},
		{name: "of another CA", base: base, d: delta(dc.other, 6, 5), wantIs: revoke.ErrDeltaMismatch,
			wantErr: `revoke: delta CRL does not apply to the complete CRL: the delta CRL is of "CN=WithDelta Other,O=minica tests", the complete CRL of "CN=WithDelta Root,O=minica tests"`},
		{name: "a complete CRL as the delta", base: base, d: base, wantIs: revoke.ErrNotDelta,
			wantErr: "revoke: not a delta CRL: CRL number 5"},
		{name: "a delta as the complete CRL", base: delta(dc.ca, 6, 5), d: delta(dc.ca, 7, 5), wantIs: revoke.ErrDeltaMismatch,
			wantErr: "revoke: delta CRL does not apply to the complete CRL: a delta CRL (number 6) has no delta of its own"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.base.WithDelta(tt.d)
			if got != nil || !errors.Is(err, tt.wantIs) || err.Error() != tt.wantErr {
				t.Fatalf("WithDelta() = %v, %v; want nil, %q", got, err, tt.wantErr)
			}
		})
	}
	checkUnchanged(t, base, dc.baseList)
	// A delta against an earlier base still applies (RFC 5280 5.2.4).
	if got, err := base.WithDelta(delta(dc.ca, 6, 3)); err != nil || got.Number().Int64() != 6 {
		t.Errorf("WithDelta(base 3) = %v, %v; want number 6", got, err)
	}
}

// TestParseCRLFileDelta reads a CA's complete CRL with its delta, in
// either order and within a hierarchy; a delta alone, two deltas of one
// CA are refused, and a delta that does not apply is left out.
func TestParseCRLFileDelta(t *testing.T) {
	dc := newDeltaCase(t)
	root := testca.NewRoot(t, "File Delta Root")
	inter := root.Intermediate(t, "File Delta Issuing CA")
	interBase := signCRL(t, inter, crlSpec{number: 5, entries: dc.baseList})
	interDelta := signCRL(t, inter, crlSpec{number: 6, base: 5, thisUpdate: testNow.Add(time.Hour), entries: dc.deltaList})
	rootCRL := signCRL(t, root, crlSpec{number: 2})
	stale := signCRL(t, dc.ca, crlSpec{number: 8, base: 6, thisUpdate: testNow.Add(time.Hour), entries: dc.deltaList})
	tests := []struct {
		name      string
		cas       []*x509.Certificate
		data      []byte
		want      []string // the issuers' CNs, in order
		wantDelta []int64  // the number of the delta applied to each, 0 for none
		wantIs    error
		wantErr   string
	}{
		{name: "complete, then delta", data: pemCRLs(dc.baseDER, dc.deltaDER),
			want: []string{"WithDelta Root"}, wantDelta: []int64{6}},
		{name: "delta, then complete", data: pemCRLs(dc.deltaDER, dc.baseDER),
			want: []string{"WithDelta Root"}, wantDelta: []int64{6}},
		{name: "a delta that does not apply", data: pemCRLs(dc.baseDER, stale),
			want: []string{"WithDelta Root"}, wantDelta: []int64{0}},
		{name: "hierarchy, a delta for the issuing CA", cas: []*x509.Certificate{root.Cert, inter.Cert},
			data: pemCRLs(rootCRL, interDelta, interBase),
			want: []string{"File Delta Root", "File Delta Issuing CA"}, wantDelta: []int64{0, 6}},
		{name: "a delta alone", data: pemCRLs(dc.deltaDER), wantIs: revoke.ErrIncomplete,
			wantErr: `revoke: not a complete CRL for client certificates: a delta CRL (number 6, base 5) of "CN=WithDelta Root,O=minica tests" without the complete CRL of its CA`},
		{name: "a delta of the issuing CA without its complete CRL", cas: []*x509.Certificate{root.Cert, inter.Cert},
			data: pemCRLs(rootCRL, interDelta), wantIs: revoke.ErrIncomplete,
			wantErr: `revoke: not a complete CRL for client certificates: a delta CRL (number 6, base 5) of "CN=File Delta Issuing CA" without the complete CRL of its CA`},
		{name: "two deltas of one CA", data: pemCRLs(dc.baseDER, dc.deltaDER, stale), wantIs: revoke.ErrTwoCRLs,
			wantErr: `revoke: two CRLs of one CA ("CN=WithDelta Root,O=minica tests")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cas := tt.cas
			if cas == nil {
				cas = []*x509.Certificate{dc.ca.Cert}
			}
			got, err := revoke.ParseCRLFile(tt.data, cas)
			if tt.wantIs != nil {
				if got != nil || !errors.Is(err, tt.wantIs) || err.Error() != tt.wantErr {
					t.Fatalf("ParseCRLFile() = %v, %v; want nil, %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || len(got) != len(tt.want) {
				t.Fatalf("ParseCRLFile() = %d CRLs, %v; want %d", len(got), err, len(tt.want))
			}
			for i, c := range got {
				crl, ok := c.CRL.(*revoke.CRL)
				if !ok || c.Issuer.Subject.CommonName != tt.want[i] {
					t.Fatalf("CRL %d = %T of %q; want a *revoke.CRL of %q", i+1, c.CRL, c.Issuer.Subject.CommonName, tt.want[i])
				}
				checkApplied(t, crl, tt.wantDelta[i])
			}
		})
	}
}

// checkApplied fails t unless crl has the delta numbered want applied to
// the complete CRL number 5 of newDeltaCase's lists (want 0: no delta).
func checkApplied(t *testing.T, crl *revoke.CRL, want int64) {
	t.Helper()
	switch {
	case want == 0 && crl.Delta() != nil:
		t.Errorf("delta %v applied; want none", crl.Delta().Number())
	case want == 0:
		return
	case crl.Delta() == nil || crl.Number().Int64() != want || crl.Complete().Number().Int64() != 5:
		t.Errorf("CRL number %v, complete number %v; want delta %d applied to complete CRL 5", crl.Number(), crl.Complete().Number(), want)
	case !crl.IsRevoked(onlyDelta) || crl.IsRevoked(heldLifted) || !crl.IsRevoked(onlyBase):
		t.Errorf("IsRevoked(delta only, lifted, base only) = %v, %v, %v; want true, false, true",
			crl.IsRevoked(onlyDelta), crl.IsRevoked(heldLifted), crl.IsRevoked(onlyBase))
	}
}

package revoke_test

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"

	"minica/internal/testca"
	"minica/revoke"
)

func parseOrFatal(t testing.TB, data []byte, issuer *x509.Certificate) *revoke.CRL {
	t.Helper()
	crl, err := revoke.ParseCRL(data, issuer)
	if err != nil {
		t.Fatalf("ParseCRL() error = %v", err)
	}
	return crl
}

func TestParseCRLRoundTrip(t *testing.T) {
	ca := newCA(t, "Parse Root", testca.NewKey(t), testNow)
	entries := append(sampleEntries(testNow), slices.Collect(synthEntries(1000, testNow))...)
	p := revoke.Params{Issuer: ca.Cert, Signer: ca.Key, Number: big.NewInt(77),
		ThisUpdate: testNow, NextUpdate: testNow.Add(7 * 24 * time.Hour)}
	der := buildOrFatal(t, p, entries)
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: der})
	for name, data := range map[string][]byte{"DER": der, "PEM": pemBytes, "PEM with blank lines": append(append([]byte("\n\n"), pemBytes...), "\n"...)} {
		t.Run(name, func(t *testing.T) {
			crl := parseOrFatal(t, data, ca.Cert)
			if crl.Number().Cmp(p.Number) != 0 || !crl.ThisUpdate().Equal(p.ThisUpdate) || !crl.NextUpdate().Equal(p.NextUpdate) {
				t.Errorf("Number, ThisUpdate, NextUpdate = %v, %v, %v; want %v, %v, %v",
					crl.Number(), crl.ThisUpdate(), crl.NextUpdate(), p.Number, p.ThisUpdate, p.NextUpdate)
			}
			if crl.Len() != len(entries) {
				t.Errorf("Len() = %d; want %d", crl.Len(), len(entries))
			}
			if crl.Issuer() != ca.Cert {
				t.Errorf("Issuer() is not the certificate given to ParseCRL")
			}
			checkLookups(t, crl, entries)
		})
	}
}

func checkLookups(t *testing.T, crl *revoke.CRL, entries []revoke.Entry) {
	t.Helper()
	for _, want := range entries {
		got, ok := crl.Lookup(want.Serial)
		if !ok || !crl.IsRevoked(want.Serial) {
			t.Fatalf("Lookup(%x) = _, %v; want listed", want.Serial, ok)
		}
		if got.Serial.Cmp(want.Serial) != 0 || !got.RevokedAt.Equal(want.RevokedAt) || got.Reason != want.Reason {
			t.Fatalf("Lookup(%x) = %x %v %v; want %x %v %v", want.Serial, got.Serial, got.RevokedAt, got.Reason,
				want.Serial, want.RevokedAt, want.Reason)
		}
	}
	for _, s := range []*big.Int{nil, big.NewInt(0), big.NewInt(1), big.NewInt(-0x2a), big.NewInt(0x2b),
		new(big.Int).Lsh(big.NewInt(1), 300), new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(3), 300))} {
		if _, ok := crl.Lookup(s); ok || crl.IsRevoked(s) {
			t.Errorf("Lookup(%v) found an entry; want none", s)
		}
	}
}

// TestParseCRLFromStdlib reads CRLs written by x509.CreateRevocationList,
// an independent encoder, for every key type.
func TestParseCRLFromStdlib(t *testing.T) {
	entries := sampleEntries(testNow)
	for name, key := range keyTypes(t) {
		t.Run(name, func(t *testing.T) {
			ca := newCA(t, "Stdlib Root "+name, key, testNow)
			der, err := x509.CreateRevocationList(rand.Reader, &x509.RevocationList{
				Number: big.NewInt(3), ThisUpdate: testNow, NextUpdate: testNow.Add(time.Hour),
				RevokedCertificateEntries: stdlibEntries(slices.Values(entries)),
			}, ca.Cert, ca.Key)
			if err != nil {
				t.Fatal(err)
			}
			crl := parseOrFatal(t, der, ca.Cert)
			if crl.Len() != len(entries) || crl.Number().Int64() != 3 {
				t.Errorf("Len(), Number() = %d, %v; want %d, 3", crl.Len(), crl.Number(), len(entries))
			}
			checkLookups(t, crl, entries)
		})
	}
}

// TestParseCRLNegativeSerials: RFC 5280 forbids them, old CAs wrote them;
// they must be found exactly, not confused with their absolute values.
func TestParseCRLNegativeSerials(t *testing.T) {
	ca := newCA(t, "Negative Root", testca.NewKey(t), testNow)
	var entries []revoke.Entry
	for _, v := range []int64{-1, -0x80, -0x81, 5, 0x7fff} {
		entries = append(entries, revoke.Entry{Serial: big.NewInt(v), RevokedAt: testNow, Reason: revoke.Superseded})
	}
	// Enough random serials of both signs and several widths for the
	// bucket index to be built.
	for i := range 600 {
		s := testca.RandomSerial(t)
		s.Rsh(s, uint(i%90))
		if i%3 == 0 {
			s.Neg(s)
		}
		if s.Sign() == 0 || s.IsInt64() && slices.Contains([]int64{-1, -0x80, -0x81, 5, 0x7fff}, s.Int64()) {
			continue
		}
		entries = append(entries, revoke.Entry{Serial: s, RevokedAt: testNow.Add(-time.Duration(i) * time.Second), Reason: revoke.KeyCompromise})
	}
	der := stdlibCRL(t, ca, entries, nil)
	crl := parseOrFatal(t, der, ca.Cert)
	checkLookups(t, crl, entries)
	for _, v := range []int64{1, 0x80, 0x81, -5, -0x7fff, -0x8000} {
		if crl.IsRevoked(big.NewInt(v)) {
			t.Errorf("IsRevoked(%d) = true; want false", v)
		}
	}
}

func stdlibCRL(t *testing.T, ca *testca.CA, entries []revoke.Entry, edit func(*x509.RevocationList)) []byte {
	t.Helper()
	tmpl := &x509.RevocationList{Number: big.NewInt(3), ThisUpdate: testNow, NextUpdate: testNow.Add(time.Hour),
		RevokedCertificateEntries: stdlibEntries(slices.Values(entries))}
	if edit != nil {
		edit(tmpl)
	}
	der, err := x509.CreateRevocationList(rand.Reader, tmpl, ca.Cert, ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// signedCRL signs a TBSCertList whose content tbs writes, with ca's P-256 key.
func signedCRL(t *testing.T, ca *testca.CA, tbs func(b *cryptobyte.Builder)) []byte {
	t.Helper()
	alg := []byte{0x30, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02}
	var tb cryptobyte.Builder
	tb.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) { tbs(b) })
	tbsDER := tb.BytesOrPanic()
	digest := sha256.Sum256(tbsDER)
	sig, err := ca.Key.Sign(rand.Reader, digest[:], crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	var b cryptobyte.Builder
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddBytes(tbsDER)
		b.AddBytes(alg)
		b.AddASN1BitString(sig)
	})
	return b.BytesOrPanic()
}

func TestParseCRLRefuses(t *testing.T) {
	ca := newCA(t, "Refuse Root", testca.NewKey(t), testNow)
	other := newCA(t, "Other Root", testca.NewKey(t), testNow)
	// Same name, another key: the AKI gives it away.
	twin := newCA(t, "Refuse Root", testca.NewKey(t), testNow)
	// Same name and key identifier, another key: only the signature does.
	forger := newCA(t, "Refuse Root", testca.NewKey(t), testNow)
	forger.Cert.SubjectKeyId = ca.Cert.SubjectKeyId
	entries := sampleEntries(testNow)
	good := buildOrFatal(t, revoke.Params{Issuer: ca.Cert, Signer: ca.Key, Number: big.NewInt(9),
		ThisUpdate: testNow, NextUpdate: testNow.Add(time.Hour)}, entries)
	flipped := bytes.Clone(good)
	flipped[len(flipped)-40] ^= 0x01 // inside the signature
	entryFlip := bytes.Clone(good)
	entryFlip[bytes.Index(entryFlip, []byte{0x02, 0x01, 0x2a})+2] = 0x2b // serial 2a becomes 2b
	algo := []byte{0x30, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02}
	utc := func(b *cryptobyte.Builder, t time.Time) { b.AddASN1UTCTime(t) }
	numberExt := func(b *cryptobyte.Builder) {
		b.AddASN1(cbasn1.Tag(0).Constructed().ContextSpecific(), func(b *cryptobyte.Builder) {
			b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
				b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
					b.AddASN1ObjectIdentifier(asn1.ObjectIdentifier{2, 5, 29, 20})
					b.AddASN1(cbasn1.OCTET_STRING, func(b *cryptobyte.Builder) { b.AddASN1Int64(4) })
				})
			})
		})
	}
	critical := pkix.Extension{Id: asn1.ObjectIdentifier{1, 2, 3, 4}, Critical: true, Value: []byte{0x05, 0x00}}
	delta := pkix.Extension{Id: asn1.ObjectIdentifier{2, 5, 29, 27}, Critical: true, Value: []byte{0x02, 0x01, 0x02}}
	certIssuer := pkix.Extension{Id: asn1.ObjectIdentifier{2, 5, 29, 29}, Critical: true, Value: []byte{0x30, 0x00}}

	tests := []struct {
		name    string
		data    []byte
		issuer  *x509.Certificate
		wantIs  error
		wantErr string
		// inEntries: the fault is in the list of entries, which CRLNumber
		// does not read.
		inEntries bool
	}{
		{name: "another CA", data: good, issuer: other.Cert, wantIs: revoke.ErrWrongIssuer,
			wantErr: `revoke: CRL issued by another CA: CRL issuer is "CN=Refuse Root,O=minica tests", CA is "CN=Other Root,O=minica tests"`},
		{name: "same name, other key", data: good, issuer: twin.Cert, wantIs: revoke.ErrWrongIssuer,
			wantErr: "revoke: CRL issued by another CA: authority key identifier "},
		{name: "forged key identifier", data: good, issuer: forger.Cert, wantIs: revoke.ErrBadSignature,
			wantErr: "revoke: CRL signature does not verify: x509: ECDSA verification failure"},
		{name: "signature flipped", data: flipped, issuer: ca.Cert, wantIs: revoke.ErrBadSignature,
			wantErr: "revoke: CRL signature does not verify: "},
		{name: "serial altered", data: entryFlip, issuer: ca.Cert, wantIs: revoke.ErrBadSignature,
			wantErr: "revoke: CRL signature does not verify: x509: ECDSA verification failure"},
		{name: "empty", data: nil, issuer: ca.Cert, wantIs: revoke.ErrMalformed,
			wantErr: "revoke: malformed CRL: not a DER CertificateList"},
		{name: "garbage", data: []byte("hello, world"), issuer: ca.Cert, wantIs: revoke.ErrMalformed,
			wantErr: "revoke: malformed CRL: not a DER CertificateList"},
		{name: "truncated", data: good[:len(good)-1], issuer: ca.Cert, wantIs: revoke.ErrMalformed,
			wantErr: "revoke: malformed CRL: not a DER CertificateList"},
		{name: "trailing byte", data: append(bytes.Clone(good), 0), issuer: ca.Cert, wantIs: revoke.ErrMalformed,
			wantErr: "revoke: malformed CRL: not a DER CertificateList"},
		{name: "certificate PEM", data: ca.PEM(), issuer: ca.Cert, wantIs: revoke.ErrMalformed,
			wantErr: `revoke: malformed CRL: PEM block is "CERTIFICATE", not "X509 CRL"`},
		{name: "broken PEM", data: []byte("-----BEGIN X509 CRL-----\nnot base64\n"), issuer: ca.Cert, wantIs: revoke.ErrMalformed,
			wantErr: "revoke: malformed CRL: invalid PEM"},
		{name: "two PEM blocks", data: append(pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: good}), ca.PEM()...),
			issuer: ca.Cert, wantIs: revoke.ErrMalformed, wantErr: "revoke: malformed CRL: data after the PEM block"},
		{name: "duplicate serial", inEntries: true, issuer: ca.Cert, wantIs: revoke.ErrMalformed,
			data:    stdlibCRL(t, ca, append(sampleEntries(testNow), sampleEntries(testNow)[1]), nil),
			wantErr: "revoke: malformed CRL: serial 80 listed twice"},
		{name: "delta CRL", issuer: ca.Cert, wantIs: revoke.ErrIncomplete,
			data:    stdlibCRL(t, ca, nil, func(r *x509.RevocationList) { r.ExtraExtensions = []pkix.Extension{delta} }),
			wantErr: "revoke: not a complete CRL for client certificates: delta CRL"},
		{name: "delta CRL, bad signature", issuer: forger.Cert, wantIs: revoke.ErrBadSignature,
			data:    stdlibCRL(t, ca, nil, func(r *x509.RevocationList) { r.ExtraExtensions = []pkix.Extension{delta} }),
			wantErr: "revoke: CRL signature does not verify: "},
		{name: "unknown critical extension", issuer: ca.Cert, wantIs: revoke.ErrMalformed,
			data:    stdlibCRL(t, ca, nil, func(r *x509.RevocationList) { r.ExtraExtensions = []pkix.Extension{critical} }),
			wantErr: "revoke: malformed CRL: unsupported critical extension 1.2.3.4"},
		{name: "indirect CRL entry", inEntries: true, issuer: ca.Cert, wantIs: revoke.ErrMalformed,
			data: stdlibCRL(t, ca, entries[:1], func(r *x509.RevocationList) {
				r.RevokedCertificateEntries[0].ExtraExtensions = []pkix.Extension{certIssuer}
			}),
			wantErr: "revoke: malformed CRL: entry 0: indirect CRLs are not supported"},
		{name: "critical entry extension", inEntries: true, issuer: ca.Cert, wantIs: revoke.ErrMalformed,
			data: stdlibCRL(t, ca, entries[:1], func(r *x509.RevocationList) {
				r.RevokedCertificateEntries[0].ExtraExtensions = []pkix.Extension{critical}
			}),
			wantErr: "revoke: malformed CRL: entry 0: unsupported critical extension 1.2.3.4"},
		{name: "removeFromCRL entry", inEntries: true, issuer: ca.Cert, wantIs: revoke.ErrMalformed,
			data: stdlibCRL(t, ca, entries[:1], func(r *x509.RevocationList) {
				r.RevokedCertificateEntries[0].ReasonCode = 8
			}),
			wantErr: "revoke: malformed CRL: entry 0: invalid reason code"},
		{name: "v1 CRL", issuer: ca.Cert, wantIs: revoke.ErrMalformed,
			data: signedCRL(t, ca, func(b *cryptobyte.Builder) {
				b.AddBytes(algo)
				b.AddBytes(ca.Cert.RawSubject)
				utc(b, testNow)
				utc(b, testNow.Add(time.Hour))
			}),
			wantErr: "revoke: malformed CRL: invalid or missing version"},
		{name: "no CRL number", issuer: ca.Cert, wantIs: revoke.ErrMalformed,
			data: signedCRL(t, ca, func(b *cryptobyte.Builder) {
				b.AddASN1Int64(1)
				b.AddBytes(algo)
				b.AddBytes(ca.Cert.RawSubject)
				utc(b, testNow)
				utc(b, testNow.Add(time.Hour))
			}),
			wantErr: "revoke: malformed CRL: no CRL number"},
		{name: "no next update", issuer: ca.Cert, wantIs: revoke.ErrMalformed,
			data: signedCRL(t, ca, func(b *cryptobyte.Builder) {
				b.AddASN1Int64(1)
				b.AddBytes(algo)
				b.AddBytes(ca.Cert.RawSubject)
				utc(b, testNow)
				numberExt(b)
			}),
			wantErr: "revoke: malformed CRL: no next update"},
		{name: "next update before this update", issuer: ca.Cert, wantIs: revoke.ErrMalformed,
			data: signedCRL(t, ca, func(b *cryptobyte.Builder) {
				b.AddASN1Int64(1)
				b.AddBytes(algo)
				b.AddBytes(ca.Cert.RawSubject)
				utc(b, testNow)
				utc(b, testNow.Add(-time.Second))
				numberExt(b)
			}),
			wantErr: "revoke: malformed CRL: next update before this update"},
		{name: "inner algorithm differs", issuer: ca.Cert, wantIs: revoke.ErrMalformed,
			data: signedCRL(t, ca, func(b *cryptobyte.Builder) {
				b.AddASN1Int64(1)
				b.AddBytes([]byte{0x30, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x03})
			}),
			wantErr: "revoke: malformed CRL: inner and outer signature algorithms differ"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			crl, err := revoke.ParseCRL(tt.data, tt.issuer)
			if !errors.Is(err, tt.wantIs) {
				t.Fatalf("ParseCRL() error = %v; want errors.Is %v", err, tt.wantIs)
			}
			if got := err.Error(); len(got) < len(tt.wantErr) || got[:len(tt.wantErr)] != tt.wantErr {
				t.Errorf("ParseCRL() error = %q; want prefix %q", got, tt.wantErr)
			}
			if crl != nil {
				t.Errorf("ParseCRL() returned a CRL with an error")
			}
			n, err := revoke.CRLNumber(tt.data, tt.issuer)
			switch {
			case tt.inEntries && (err != nil || n.Cmp(big.NewInt(3)) != 0):
				t.Errorf("CRLNumber() = %v, %v; want 3, nil: it does not read the entries", n, err)
			case !tt.inEntries && (!errors.Is(err, tt.wantIs) || !strings.HasPrefix(err.Error(), tt.wantErr) || n != nil):
				t.Errorf("CRLNumber() = %v, %v; want the error of ParseCRL", n, err)
			}
		})
	}
	if n, err := revoke.CRLNumber(good, ca.Cert); err != nil || n.Cmp(big.NewInt(9)) != 0 {
		t.Errorf("CRLNumber(good) = %v, %v; want 9", n, err)
	}
	if _, err := revoke.CRLNumber(good, nil); err == nil || err.Error() != "checking CRL: no issuer certificate" {
		t.Errorf("CRLNumber(nil issuer) error = %v", err)
	}
	if _, err := revoke.ParseCRL(good, nil); err == nil || err.Error() != "checking CRL: no issuer certificate" {
		t.Errorf("ParseCRL(nil issuer) error = %v", err)
	}
}

// idpExtension returns an issuing distribution point extension (RFC 5280
// section 5.2.5) whose SEQUENCE content fields writes.
func idpExtension(critical bool, fields func(b *cryptobyte.Builder)) pkix.Extension {
	var b cryptobyte.Builder
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) { fields(b) })
	return pkix.Extension{Id: asn1.ObjectIdentifier{2, 5, 29, 28}, Critical: critical, Value: b.BytesOrPanic()}
}

// idpBool writes the IMPLICIT [tag] BOOLEAN of an issuing distribution point.
func idpBool(tag uint8, v byte) func(b *cryptobyte.Builder) {
	return func(b *cryptobyte.Builder) {
		b.AddASN1(cbasn1.Tag(tag).ContextSpecific(), func(b *cryptobyte.Builder) { b.AddUint8(v) })
	}
}

// idpURI writes the distributionPoint [0] fullName [0] of one URI.
func idpURI(uri string) func(b *cryptobyte.Builder) {
	return func(b *cryptobyte.Builder) {
		b.AddASN1(cbasn1.Tag(0).Constructed().ContextSpecific(), func(b *cryptobyte.Builder) {
			b.AddASN1(cbasn1.Tag(0).Constructed().ContextSpecific(), func(b *cryptobyte.Builder) {
				b.AddASN1(cbasn1.Tag(6).ContextSpecific(), func(b *cryptobyte.Builder) { b.AddBytes([]byte(uri)) })
			})
		})
	}
}

func idpFields(fields ...func(b *cryptobyte.Builder)) func(b *cryptobyte.Builder) {
	return func(b *cryptobyte.Builder) {
		for _, f := range fields {
			f(b)
		}
	}
}

// TestParseCRLScope: a CRL that does not cover every client certificate of
// its issuer must never stand in for the complete CRL, whether its issuing
// distribution point is marked critical or not; one that names its
// distribution point or covers only user certificates is complete for
// client certificates.
func TestParseCRLScope(t *testing.T) {
	ca := newCA(t, "Scope Root", testca.NewKey(t), testNow)
	someReasons := func(b *cryptobyte.Builder) { // keyCompromise, cACompromise
		b.AddASN1(cbasn1.Tag(3).ContextSpecific(), func(b *cryptobyte.Builder) { b.AddBytes([]byte{0x05, 0x60}) })
	}
	tests := []struct {
		name    string
		idp     func(b *cryptobyte.Builder)
		value   []byte // the raw extension value instead of idp
		wantIs  error
		wantErr string
	}{
		{name: "distribution point only", idp: idpURI("http://crl.example.com/root.crl")},
		{name: "only user certificates", idp: idpBool(1, 0xff)},
		{name: "distribution point and only user certificates", idp: idpFields(idpURI("http://x.example/a.crl"), idpBool(1, 0xff))},
		{name: "only CA certificates false", idp: idpFields(idpURI("http://x.example/a.crl"), idpBool(2, 0x00))},
		{name: "only CA certificates", idp: idpBool(2, 0xff), wantIs: revoke.ErrIncomplete,
			wantErr: "revoke: not a complete CRL for client certificates: issuing distribution point has onlyContainsCACerts"},
		{name: "only user and only CA certificates", idp: idpFields(idpBool(1, 0xff), idpBool(2, 0xff)), wantIs: revoke.ErrIncomplete,
			wantErr: "revoke: not a complete CRL for client certificates: issuing distribution point has onlyContainsCACerts"},
		{name: "only some reasons", idp: idpFields(idpURI("http://x.example/a.crl"), someReasons), wantIs: revoke.ErrIncomplete,
			wantErr: "revoke: not a complete CRL for client certificates: issuing distribution point has onlySomeReasons"},
		{name: "indirect", idp: idpBool(4, 0xff), wantIs: revoke.ErrIncomplete,
			wantErr: "revoke: not a complete CRL for client certificates: issuing distribution point has indirectCRL"},
		{name: "only user certificates, indirect", idp: idpFields(idpBool(1, 0xff), idpBool(4, 0xff)), wantIs: revoke.ErrIncomplete,
			wantErr: "revoke: not a complete CRL for client certificates: issuing distribution point has indirectCRL"},
		{name: "only attribute certificates", idp: idpBool(5, 0xff), wantIs: revoke.ErrIncomplete,
			wantErr: "revoke: not a complete CRL for client certificates: issuing distribution point has onlyContainsAttributeCerts"},
		{name: "empty", idp: idpFields(), wantIs: revoke.ErrMalformed,
			wantErr: "revoke: malformed CRL: empty issuing distribution point"},
		{name: "not a sequence", value: []byte{0x05, 0x00}, wantIs: revoke.ErrMalformed,
			wantErr: "revoke: malformed CRL: invalid issuing distribution point"},
		{name: "fields out of order", idp: idpFields(idpBool(4, 0xff), idpBool(1, 0xff)), wantIs: revoke.ErrMalformed,
			wantErr: "revoke: malformed CRL: invalid issuing distribution point"},
		{name: "unknown field", idp: idpBool(6, 0xff), wantIs: revoke.ErrMalformed,
			wantErr: "revoke: malformed CRL: invalid issuing distribution point"},
		{name: "boolean not DER", idp: idpBool(2, 0x01), wantIs: revoke.ErrMalformed,
			wantErr: "revoke: malformed CRL: invalid issuing distribution point"},
	}
	for _, tt := range tests {
		for _, critical := range []bool{true, false} {
			name := tt.name + map[bool]string{true: ", critical", false: ", not critical"}[critical]
			t.Run(name, func(t *testing.T) {
				ext := pkix.Extension{Id: asn1.ObjectIdentifier{2, 5, 29, 28}, Critical: critical, Value: tt.value}
				if tt.idp != nil {
					ext = idpExtension(critical, tt.idp)
				}
				entries := sampleEntries(testNow)
				data := stdlibCRL(t, ca, entries, func(r *x509.RevocationList) { r.ExtraExtensions = []pkix.Extension{ext} })
				crl, err := revoke.ParseCRL(data, ca.Cert)
				if tt.wantIs == nil {
					if err != nil {
						t.Fatalf("ParseCRL() error = %v; want nil", err)
					}
					checkLookups(t, crl, entries)
					return
				}
				if !errors.Is(err, tt.wantIs) || err.Error() != tt.wantErr {
					t.Fatalf("ParseCRL() error = %v; want %q", err, tt.wantErr)
				}
				if crl != nil {
					t.Errorf("ParseCRL() returned a CRL with an error")
				}
				if _, err := revoke.CRLNumber(data, ca.Cert); !errors.Is(err, tt.wantIs) {
					t.Errorf("CRLNumber() error = %v; want the error of ParseCRL", err)
				}
			})
		}
	}
}

// TestParseCRLDelta: a delta CRL lists only what changed since its base, so
// it is never taken for the complete CRL, critical indicator or not.
func TestParseCRLDelta(t *testing.T) {
	ca := newCA(t, "Delta Root", testca.NewKey(t), testNow)
	for _, critical := range []bool{true, false} {
		delta := pkix.Extension{Id: asn1.ObjectIdentifier{2, 5, 29, 27}, Critical: critical, Value: []byte{0x02, 0x01, 0x02}}
		data := stdlibCRL(t, ca, nil, func(r *x509.RevocationList) { r.ExtraExtensions = []pkix.Extension{delta} })
		want := "revoke: not a complete CRL for client certificates: delta CRL (deltaCRLIndicator, base CRL 2)"
		if _, err := revoke.ParseCRL(data, ca.Cert); !errors.Is(err, revoke.ErrIncomplete) || err.Error() != want {
			t.Errorf("critical %v: ParseCRL() error = %v; want %q", critical, err, want)
		}
	}
	bad := pkix.Extension{Id: asn1.ObjectIdentifier{2, 5, 29, 27}, Critical: true, Value: []byte{0x05, 0x00}}
	data := stdlibCRL(t, ca, nil, func(r *x509.RevocationList) { r.ExtraExtensions = []pkix.Extension{bad} })
	want := "revoke: malformed CRL: invalid delta CRL indicator"
	if _, err := revoke.ParseCRL(data, ca.Cert); !errors.Is(err, revoke.ErrMalformed) || err.Error() != want {
		t.Errorf("ParseCRL() error = %v; want %q", err, want)
	}
}

// TestCheckSignature: the signature check alone passes a delta or scoped CRL
// that its issuer signed, and refuses one it did not, with ParseCRL's errors.
func TestCheckSignature(t *testing.T) {
	ca := newCA(t, "Check Root", testca.NewKey(t), testNow)
	other := newCA(t, "Check Other", testca.NewKey(t), testNow)
	forger := newCA(t, "Check Root", testca.NewKey(t), testNow)
	forger.Cert.SubjectKeyId = ca.Cert.SubjectKeyId
	delta := pkix.Extension{Id: asn1.ObjectIdentifier{2, 5, 29, 27}, Critical: true, Value: []byte{0x02, 0x01, 0x02}}
	data := stdlibCRL(t, ca, nil, func(r *x509.RevocationList) {
		r.ExtraExtensions = []pkix.Extension{delta, idpExtension(true, idpBool(4, 0xff))}
	})
	if err := revoke.CheckSignature(data, ca.Cert); err != nil {
		t.Errorf("CheckSignature(issuer) error = %v; want nil", err)
	}
	if _, err := revoke.ParseCRL(data, ca.Cert); !errors.Is(err, revoke.ErrIncomplete) {
		t.Errorf("ParseCRL() error = %v; want ErrIncomplete", err)
	}
	for _, tt := range []struct {
		name   string
		issuer *x509.Certificate
		wantIs error
	}{
		{"another CA", other.Cert, revoke.ErrWrongIssuer},
		{"forged", forger.Cert, revoke.ErrBadSignature},
	} {
		if err := revoke.CheckSignature(data, tt.issuer); !errors.Is(err, tt.wantIs) {
			t.Errorf("%s: CheckSignature() error = %v; want %v", tt.name, err, tt.wantIs)
		}
	}
	if err := revoke.CheckSignature([]byte("junk"), ca.Cert); !errors.Is(err, revoke.ErrMalformed) {
		t.Errorf("CheckSignature(junk) error = %v; want ErrMalformed", err)
	}
}

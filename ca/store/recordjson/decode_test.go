package recordjson

import (
	"encoding/json"
	"math/rand/v2"
	"minica/ca/store"
	"reflect"
	"strings"
	"testing"
	"time"
)

const testSerial = "0a1b2c3d4e5f60718293a4b5c6d7e8f9"

// jsonRecord is the reference decoder: what encoding/json reads from line.
func jsonRecord(line []byte) (*store.Record, error) {
	var r store.Record
	if err := json.Unmarshal(line, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

func TestDecodeRecordJSON(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	issued := &store.Record{
		Serial: testSerial, Name: "alice", Profile: "client", Status: store.StatusValid,
		Subject: "emailAddress=alice@example.com,CN=alice", SANs: []string{"email:alice@example.com"},
		NotBefore: at.Add(-5 * time.Minute), NotAfter: at.AddDate(1, 0, 0), Fingerprint: strings.Repeat("ab", 32),
		HasKey: true, IssuedAt: at,
	}
	revoked := *issued
	revoked.Status, revoked.RevokedAt, revoked.Reason = store.StatusRevoked, at.Add(1500*time.Millisecond), "keyCompromise"
	renewed := *issued
	renewed.SANs = []string{"dns:a.example", "ip:192.0.2.1", "uri:spiffe://x/y"}
	renewed.RenewalOf, renewed.RenewedBy = strings.Repeat("1", 32), strings.Repeat("2", 32)
	pending := &store.Record{Serial: testSerial, Name: "alice", Profile: "server", Status: store.StatusPending, IssuedAt: at}
	acme := *issued
	acme.Profile, acme.SANs, acme.ACMEAccount = "server", []string{"dns:web.svc.example"}, "aC9-x_Yz"
	device := *issued
	device.Device = "Simon's laptop ünë"
	line := func(r *store.Record) string { return string(store.EncodeRecord(r)) }
	const head = `{"serial":"` + testSerial + `","name":"alice","profile":"client","status":"valid"`
	const tail = `,"has_key":false,"issued_at":"2030-01-02T03:04:05Z"}`
	tests := []struct {
		name string
		line string
		fast bool // the hand-written path takes it
	}{
		{"issued", line(issued), true},
		{"pending", line(pending), true},
		{"revoked, a fraction of a second", line(&revoked), true},
		{"renewed, every kind of SAN", line(&renewed), true},
		{"ordered through ACME", line(&acme), true},
		{"ACME account after a renewal", strings.TrimSuffix(line(&renewed), "}\n") + `,"acme_account":"a1"}`, true},
		{"ACME account out of order", head + `,"acme_account":"a1"` + tail, false},
		{"empty ACME account", head + tail[:len(tail)-1] + `,"acme_account":""}`, true},
		{"a sign-in device", line(&device), true},
		{"device after an ACME account", head + tail[:len(tail)-1] + `,"acme_account":"a1","device":"d"}`, true},
		{"device before the ACME account", head + tail[:len(tail)-1] + `,"device":"d","acme_account":"a1"}`, false},
		{"escaped device", head + tail[:len(tail)-1] + `,"device":"a\u003cb"}`, false},
		{"no newline", strings.TrimSuffix(line(issued), "\n"), true},
		{"non-ASCII subject", head + `,"subject":"CN=Zoë Ünal"` + tail, true},
		{"escaped subject", head + `,"subject":"CN=a\u003cb\"c\\d"` + tail, false},
		{"not UTF-8", head + `,"subject":"CN=` + "\xff" + `"` + tail, false},
		{"empty SAN list", head + `,"sans":[]` + tail, false},
		{"null SANs", head + `,"sans":null` + tail, false},
		{"fields reordered", `{"name":"alice","serial":"` + testSerial + `","profile":"client","status":"valid"` + tail, false},
		{"spaces", strings.ReplaceAll(line(issued), `","`, `", "`), false},
		{"keys in another case", strings.Replace(line(issued), `"name"`, `"NAME"`, 1), false},
		{"unknown field", head + `,"comment":"x"` + tail, false},
		{"time zone offset", head + `,"has_key":false,"issued_at":"2030-01-02T04:04:05+01:00"}`, false},
		{"CRLF", strings.TrimSuffix(line(issued), "\n") + "\r\n", false},
		{"empty subject", head + `,"subject":""` + tail, true},
		{"zero time written", head + `,"not_before":"0001-01-01T00:00:00Z"` + tail, true},
		{"nine fraction digits", head + `,"has_key":false,"issued_at":"2030-01-02T03:04:05.123456789Z"}`, true},
		{"ten fraction digits", head + `,"has_key":false,"issued_at":"2030-01-02T03:04:05.1234567891Z"}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := jsonRecord([]byte(tt.line))
			if err != nil {
				t.Fatalf("encoding/json: %v", err)
			}
			got, err := Decode([]byte(tt.line))
			if err != nil {
				t.Fatalf("DecodeRecord: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("DecodeRecord = %+v; want %+v", got, want)
			}
			if _, fast := decodeFast([]byte(tt.line)); fast != tt.fast {
				t.Errorf("hand-written path took it: %v; want %v", fast, tt.fast)
			}
		})
	}
	// What EncodeRecord writes reads back as it was.
	for _, r := range []*store.Record{issued, &revoked, &renewed, pending, &acme, &device} {
		if got, ok := decodeFast(store.EncodeRecord(r)); !ok || !reflect.DeepEqual(got, r) {
			t.Errorf("decodeFast(store.EncodeRecord(%+v)) = %+v, %v", r, got, ok)
		}
	}
}

func TestDecodeRecordJSONErrors(t *testing.T) {
	const head = `{"serial":"` + testSerial + `","name":"alice","profile":"client","status":"valid"`
	tests := []struct {
		name    string
		line    string
		wantErr string
	}{
		{"empty", "", "unexpected end of JSON input"},
		{"cut short", head, "unexpected end of JSON input"},
		{"not JSON", "serial=1\n", "invalid character 's' looking for beginning of value"},
		{"has_key a string", head + `,"has_key":"yes","issued_at":"2030-01-02T03:04:05Z"}`, "cannot unmarshal string into Go struct field Record.has_key of type bool"},
		{"day out of range", head + `,"has_key":true,"issued_at":"2030-02-30T03:04:05Z"}`, `parsing time "2030-02-30T03:04:05Z": day out of range`},
		{"control character", head + ",\"subject\":\"CN=a\x01\",\"has_key\":true,\"issued_at\":\"2030-01-02T03:04:05Z\"}", "invalid character '\\x01' in string literal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode([]byte(tt.line))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("DecodeRecord error = %v; want containing %q", err, tt.wantErr)
			}
			if _, jerr := jsonRecord([]byte(tt.line)); jerr == nil || jerr.Error() != err.Error() {
				t.Errorf("encoding/json error = %v; want the same, %v", jerr, err)
			}
		})
	}
}

// randomRecord makes a record with fields drawn to cover what the two
// decoders could read differently: empty and non-ASCII strings, characters
// that encoding/json escapes, bytes that are not UTF-8, times with and
// without fractions, in UTC and elsewhere. Half of them are in the form
// minica writes (no escapes, UTC times).
func randomRecord(rng *rand.Rand) *store.Record {
	pieces := []string{"", "a", "alice", "CN=x", "Zoë", "0a1b", "é", "\"", "\\", "<&>", "\n", "\x00", "\u2028", "\xff"}
	zones := []*time.Location{time.UTC, time.UTC, time.FixedZone("x", 3600), time.FixedZone("y", -5400)}
	if rng.IntN(2) == 0 {
		pieces, zones = pieces[:7], zones[:1] // what the hand-written path takes
	}
	str := func() string {
		var b strings.Builder
		for range rng.IntN(4) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return b.String()
	}
	when := func() time.Time {
		if rng.IntN(4) == 0 {
			return time.Time{}
		}
		t := time.Unix(rng.Int64N(1<<34)-1<<32, 0)
		if rng.IntN(3) == 0 {
			t = t.Add(time.Duration(rng.IntN(1e9)))
		}
		return t.In(zones[rng.IntN(len(zones))])
	}
	r := &store.Record{
		Serial: str(), Name: str(), Profile: store.Profile(str()), Status: store.Status(str()),
		Subject: str(), NotBefore: when(), NotAfter: when(), Fingerprint: str(), HasKey: rng.IntN(2) == 0,
		IssuedAt: when(), RevokedAt: when(), Reason: str(), RenewalOf: str(), RenewedBy: str(), ACMEAccount: str(),
		Device: str(),
	}
	for range rng.IntN(3) {
		r.SANs = append(r.SANs, str())
	}
	return r
}

// TestDecodeRecordJSONGenerated compares the two decoders on records of
// every shape EncodeRecord can write, and checks that the hand-written
// path takes the ones in its form.
func TestDecodeRecordJSONGenerated(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	fast := 0
	for range 20000 {
		line := store.EncodeRecord(randomRecord(rng))
		want, err := jsonRecord(line)
		if err != nil {
			t.Fatalf("encoding/json cannot read EncodeRecord's %q: %v", line, err)
		}
		got, err := Decode(line)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("Decode(%q) = %+v, %v; want %+v", line, got, err, want)
		}
		if _, ok := decodeFast(line); ok {
			fast++
		}
	}
	if fast < 5000 {
		t.Errorf("the hand-written path took %d of 20000 generated records; want at least 5000", fast)
	}
}

// FuzzDecodeRecordJSON checks that whatever line the hand-written path
// takes, encoding/json reads too, to the same Record, and that
// DecodeRecord fails exactly where encoding/json does.
func FuzzDecodeRecordJSON(f *testing.F) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 64 {
		f.Add(store.EncodeRecord(randomRecord(rng)))
	}
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	f.Add(store.EncodeRecord(&store.Record{Serial: testSerial, Name: "alice", Profile: "client", Status: store.StatusValid,
		Subject: "CN=alice", SANs: []string{"email:a@example.com", "dns:a.example"}, NotBefore: at, NotAfter: at,
		Fingerprint: "ab", HasKey: true, IssuedAt: at, RevokedAt: at, Reason: "superseded", RenewalOf: "1", RenewedBy: "2", ACMEAccount: "3", Device: "d"}))
	f.Fuzz(func(t *testing.T, line []byte) {
		want, wantErr := jsonRecord(line)
		if r, ok := decodeFast(line); ok {
			if wantErr != nil {
				t.Fatalf("hand-written path took %q, which encoding/json refuses: %v", line, wantErr)
			}
			if !reflect.DeepEqual(r, want) {
				t.Fatalf("hand-written path read %q as %+v; encoding/json as %+v", line, r, want)
			}
		}
		got, err := Decode(line)
		if (err == nil) != (wantErr == nil) || !reflect.DeepEqual(got, want) {
			t.Fatalf("Decode(%q) = %+v, %v; encoding/json: %+v, %v", line, got, err, want, wantErr)
		}
	})
}

// BenchmarkDecodeRecordJSON decodes the line a completed record ends with,
// through the hand-written path and through encoding/json.
func BenchmarkDecodeRecordJSON(b *testing.B) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	line := store.EncodeRecord(&store.Record{Serial: testSerial, Name: "r79906", Profile: "client", Status: store.StatusValid,
		Subject: "emailAddress=r79906@example.com,CN=r79906", SANs: []string{"email:r79906@example.com"},
		NotBefore: at, NotAfter: at.AddDate(0, 0, 10), Fingerprint: strings.Repeat("e2", 32), HasKey: true, IssuedAt: at})
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			if _, err := Decode(line); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			if _, err := jsonRecord(line); err != nil {
				b.Fatal(err)
			}
		}
	})
}

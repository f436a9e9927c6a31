package file

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"minica/ca/store"
)

func TestDecodeObject(t *testing.T) {
	one, two := []byte(`{"status":"pending"}`), []byte(`{"status":"valid"}`)
	log := appendFrame(encodeObject(one), two)
	badCRC := bytes.Clone(log)
	badCRC[len(badCRC)-1] ^= 1
	tests := []struct {
		name string
		in   []byte
		want []byte
		err  error
	}{
		{"an earlier minica's file: the data itself", one, one, nil},
		{"an empty earlier file", nil, nil, nil},
		{"one state", encodeObject(one), one, nil},
		{"two states: the last", log, two, nil},
		{"the last frame's header torn", log[:len(encodeObject(one))+5], one, nil},
		{"the last frame's data torn", log[:len(log)-3], one, nil},
		{"the last frame's CRC wrong", badCRC, one, nil},
		{"the header alone", []byte(objectMagic), nil, errNoWholeState},
		{"the only frame torn", encodeObject(one)[:len(objectMagic)+10], nil, errNoWholeState},
	}
	for _, tc := range tests {
		got, err := decodeObject(tc.in)
		if !errors.Is(err, tc.err) || !bytes.Equal(got, tc.want) {
			t.Errorf("%s: decodeObject = %q, %v; want %q, %v", tc.name, got, err, tc.want, tc.err)
		}
	}
}

// objectPath is the file of kind/id in the store at p.
func objectPath(p, kind, id string) string { return filepath.Join(p, ACMEDir, kind, id+".json") }

// TestVolatilePutsAppend: Volatile puts append to the object's file, which
// keeps its inode until it outgrows compactAt, is then written anew, and
// always reads as the last state.
func TestVolatilePutsAppend(t *testing.T) {
	s, p := newNonceStore(t)
	o := store.Object{Kind: "orders", ID: "o1", Data: []byte(`{"n":0}`), Volatile: true}
	if err := s.CreateObject(o); err != nil {
		t.Fatal(err)
	}
	first, err := os.Stat(objectPath(p, o.Kind, o.ID))
	if err != nil {
		t.Fatal(err)
	}
	appended, rewritten := 0, 0
	for i := 1; i <= 1000; i++ {
		o.Data = fmt.Appendf(nil, `{"n":%d,"pad":"%0100d"}`, i, 0)
		if err := s.PutObject(o); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(objectPath(p, o.Kind, o.ID))
		if err != nil {
			t.Fatal(err)
		}
		if os.SameFile(first, st) {
			appended++
		} else {
			rewritten++
			first = st
		}
		if st.Size() > compactAt {
			t.Fatalf("after %d puts the file holds %d bytes; want at most %d", i, st.Size(), compactAt)
		}
		if got, err := s.Object(o.Kind, o.ID); err != nil || !bytes.Equal(got.Data, o.Data) {
			t.Fatalf("Object after put %d = %q, %v; want %q", i, got.Data, err, o.Data)
		}
	}
	// 16 KiB hold about 130 of these states: one rewrite in about 130 puts.
	if rewritten < 5 || rewritten > 10 || appended < 900 {
		t.Errorf("1000 puts appended %d times and wrote the file anew %d times; want about 7 rewrites", appended, rewritten)
	}
}

// TestObjectTornAppend: a state torn by a crash in the middle of its
// append is ignored, and the next put appends after it.
func TestObjectTornAppend(t *testing.T) {
	s, p := newNonceStore(t)
	o := store.Object{Kind: "orders", ID: "o2", Data: []byte(`{"status":"pending"}`), Volatile: true}
	if err := s.CreateObject(o); err != nil {
		t.Fatal(err)
	}
	name := objectPath(p, o.Kind, o.ID)
	torn := appendFrame(nil, []byte(`{"status":"valid"}`))
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(torn[:len(torn)-4])
	f.Close()
	if got, err := s.Object(o.Kind, o.ID); err != nil || !bytes.Equal(got.Data, o.Data) {
		t.Errorf("Object after a torn append = %q, %v; want the state before it, %q", got.Data, err, o.Data)
	}
	o.Data = []byte(`{"status":"ready"}`)
	if err := s.PutObject(o); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Object(o.Kind, o.ID); err != nil || !bytes.Equal(got.Data, o.Data) {
		t.Errorf("Object after a put that followed a torn append = %q, %v; want %q", got.Data, err, o.Data)
	}
}

// TestObjectFileOfAnEarlierMinica: an object file holding the bare data,
// as an earlier minica wrote it, reads as that data and takes Volatile
// puts.
func TestObjectFileOfAnEarlierMinica(t *testing.T) {
	s, p := newNonceStore(t)
	name := objectPath(p, "accounts", "a1")
	if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
		t.Fatal(err)
	}
	old := []byte(`{"status":"valid"}`)
	if err := os.WriteFile(name, old, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Object("accounts", "a1"); err != nil || !bytes.Equal(got.Data, old) {
		t.Errorf("Object of an earlier file = %q, %v; want %q", got.Data, err, old)
	}
	next := store.Object{Kind: "accounts", ID: "a1", Data: []byte(`{"status":"deactivated"}`), Volatile: true}
	if err := s.PutObject(next); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Object("accounts", "a1"); err != nil || !bytes.Equal(got.Data, next.Data) {
		t.Errorf("Object after a Volatile put on an earlier file = %q, %v; want %q", got.Data, err, next.Data)
	}
}

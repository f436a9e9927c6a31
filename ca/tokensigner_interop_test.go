//go:build interop && cgo && !nopkcs11

package ca

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/pkcs11"

	"minica/internal/softhsm"
)

// The CA key in a SoftHSM2 token survives the token going and coming back
// (its directory moved away and back: every handle is invalid then,
// CKR_OBJECT_HANDLE_INVALID) and its sessions closed under it
// (C_CloseAllSessions from another user of the module:
// CKR_SESSION_HANDLE_INVALID): the signer re-opens the session, finds the
// key again and signs, and says meanwhile that it cannot.
func TestTokenSignerRecoversSoftHSM(t *testing.T) {
	tok := newToken(t)
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	c, err := Init(filepath.Join(t.TempDir(), "ca"), InitOptions{CommonName: "Token CA", KeyURI: mustURI(t, tok.URI("ca")), PIN: []byte(softhsm.PIN)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Now = clock
	signer, err := c.LoadSigner([]byte(softhsm.PIN))
	if err != nil {
		t.Fatal(err)
	}
	st, ok := signer.(SignerStatus)
	if !ok {
		t.Fatalf("the signer of a token key (%T) reports no status", signer)
	}
	var log strings.Builder
	st.SetLog(func(event string, kv ...string) { log.WriteString(event + " " + strings.Join(kv, " ") + "\n") })
	if err := signWith(signer); err != nil {
		t.Fatal(err)
	}

	t.Run("token gone and back", func(t *testing.T) {
		away := tok.TokenDir + ".away"
		if err := os.Rename(tok.TokenDir, away); err != nil {
			t.Fatal(err)
		}
		if err := signWith(signer); err == nil || !strings.Contains(err.Error(), `the CA key in PKCS#11 token "minica" is unusable`) {
			t.Fatalf("Sign with the token away = %v; want an error saying the key is unusable", err)
		}
		if st.Err() == nil {
			t.Fatal("Err() = nil with the token away")
		}
		if err := os.Rename(away, tok.TokenDir); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		now = now.Add(time.Minute) // past the backoff of the failed re-open
		mu.Unlock()
		if err := signWith(signer); err != nil {
			t.Fatalf("Sign with the token back = %v; want a signature", err)
		}
		if err := st.Err(); err != nil {
			t.Fatalf("Err() with the token back = %v", err)
		}
	})

	t.Run("sessions closed under it", func(t *testing.T) {
		// Another user of the module in this process closes every session
		// of the token, the CA key's included.
		p := pkcs11.New(tok.Module)
		if p == nil {
			t.Fatal("loading the module")
		}
		defer p.Destroy()
		if err := p.Initialize(); err != nil && err != pkcs11.Error(pkcs11.CKR_CRYPTOKI_ALREADY_INITIALIZED) {
			t.Fatal(err)
		}
		slots, err := p.GetSlotList(true)
		if err != nil {
			t.Fatal(err)
		}
		for _, slot := range slots {
			if err := p.CloseAllSessions(slot); err != nil {
				t.Fatal(err)
			}
		}
		before := st.Reopens()
		if err := signWith(signer); err != nil {
			t.Fatalf("Sign after the sessions were closed = %v; want a signature", err)
		}
		if err := st.Check(); err != nil {
			t.Fatalf("Check() = %v", err)
		}
		if st.Reopens() != before+1 {
			t.Errorf("Reopens() = %d after the sessions were closed; want %d", st.Reopens(), before+1)
		}
	})
	// SoftHSM2 answers for the key of a closed session as for a key gone:
	// its login went with the session.
	for _, want := range []string{"ca-key-unusable error pkcs11: 0x82: CKR_OBJECT_HANDLE_INVALID", "ca-key-reopen-failed", "ca-key-reopened"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log lacks %q:\n%s", want, log.String())
		}
	}
}

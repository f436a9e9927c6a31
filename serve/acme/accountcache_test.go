package acme

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
)

// TestDecodedAccounts: an account's bytes decode once; each caller gets
// its own copy, and other bytes (a deactivated account, another key) are
// decoded anew.
func TestDecodedAccounts(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jwk, _ := json.Marshal(jose.JSONWebKey{Key: key.Public()})
	stored := func(status string) []byte {
		b, _ := json.Marshal(account{ID: "a1", Key: jwk, Status: status, Contact: []string{"mailto:ops@example.com"}, Pending: []pendingAuthz{{ID: "z1"}}})
		return b
	}
	var c decodedAccounts
	first, err := c.decode(stored(statusValid))
	if err != nil {
		t.Fatal(err)
	}
	if first.ID != "a1" || first.Status != statusValid || first.jwk == nil || !first.jwk.IsPublic() {
		t.Fatalf("decode = %+v; want account a1, valid, with its public key parsed", first)
	}
	first.Contact[0] = "mailto:changed@example.com"
	first.Pending = append(first.Pending[:0], pendingAuthz{ID: "changed"})
	first.Key[0] = 'X'
	again, err := c.decode(stored(statusValid))
	if err != nil {
		t.Fatal(err)
	}
	if again.Contact[0] != "mailto:ops@example.com" || again.Pending[0].ID != "z1" || again.Key[0] != '{' {
		t.Errorf("a caller's change to its account reached the next caller: %+v", again)
	}
	if again.jwk != first.jwk {
		t.Error("the same bytes parsed the key twice")
	}
	off, err := c.decode(stored(statusDeactivated))
	if err != nil || off.Status != statusDeactivated {
		t.Errorf("decode of the deactivated account = %+v, %v; want its own status", off, err)
	}
	bad := strings.Replace(string(stored(statusValid)), `"kty":"EC"`, `"kty":"nope"`, 1)
	if _, err := c.decode([]byte(bad)); err == nil || !strings.Contains(err.Error(), "key") {
		t.Errorf("decode of an account whose key does not parse = %v; want an error naming the key", err)
	}
	if _, err := c.decode([]byte(`{"id":`)); err == nil {
		t.Error("decode of bytes that are not JSON succeeded")
	}
}

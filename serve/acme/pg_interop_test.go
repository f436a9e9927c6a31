//go:build interop

package acme

import (
	"testing"

	xacme "golang.org/x/crypto/acme"

	"minica/ca"
	"minica/ca/store/pg"
	"minica/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestReplicasOnPostgreSQL: three Servers whose CA keeps its store in
// PostgreSQL (as serve replicas on several hosts do) answer a client's
// requests in turn: nonces, accounts, orders, validations and
// finalization are shared through the database, and a nonce used at one
// is refused at the others.
func TestReplicasOnPostgreSQL(t *testing.T) {
	h := newHarness(t, harnessOptions{replicas: 3, store: pgtest.New(t), engines: []ca.Engine{pg.Engine{}}})
	b := h.binding(t, "web", ca.ACMEPolicy{DNSNames: []string{"localhost"}, MaxAccounts: 5})
	var clients []*xacme.Client
	for range 3 {
		cl := h.client(t)
		if _, err := h.register(t, cl, b); err != nil {
			t.Fatal(err)
		}
		clients = append(clients, cl)
	}
	for i, cl := range clients {
		if _, err := h.obtain(t, cl, newKey(t), xacme.DomainIDs("localhost")...); err != nil {
			t.Fatalf("client %d across replicas on PostgreSQL: %v", i, err)
		}
	}
	key := newKey(t)
	kid := h.account(t, key, b)
	n := h.nonce(t, h.ts.URL)
	order := []byte(`{"identifiers":[{"type":"dns","value":"localhost"}]}`)
	if st, typ, _ := h.post(t, newOrderPath, rawPost{key: key, kid: kid, nonce: n, payload: order}); st != 201 {
		t.Fatalf("newOrder with a fresh nonce = %d %s", st, typ)
	}
	for range 2 {
		if _, typ, _ := h.post(t, newOrderPath, rawPost{key: key, kid: kid, nonce: n, payload: order}); typ != ErrBadNonce {
			t.Errorf("the nonce again at another replica = %s; want badNonce", typ)
		}
	}
}

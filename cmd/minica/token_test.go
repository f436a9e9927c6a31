package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// token --cancel takes the token's ID as well as its name, and --json
// tells what became of it, without the token; an ID of the other kind is
// refused by each command, which names the other, and nothing changes.
func TestTokenCancelByID(t *testing.T) {
	t.Parallel()
	dir := newCADir(t)
	type made struct{ ID, Name, Profile, Status, Token, URL string }
	var tok, link made
	if err := json.Unmarshal([]byte(mustMinica(t, dir, "token", "web1", "--dns", "web1.example.com", "--json")), &tok); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(mustMinica(t, dir, "enroll", "alice", "--base-url", "https://pki.example.com", "--json")), &link); err != nil {
		t.Fatal(err)
	}
	before := dirHash(t, dir)
	if _, stderr, code := minica(t, dir, "enroll", "--cancel", tok.ID); code != 1 ||
		!strings.Contains(stderr, `minica: error: "web1" has a bootstrap token (`+tok.ID+`), not an enrollment link`) ||
		!strings.Contains(stderr, "minica: hint: cancel it with minica token --cancel "+tok.ID+"\n") {
		t.Errorf("enroll --cancel TOKEN-ID = exit %d:\n%s", code, stderr)
	}
	if _, stderr, code := minica(t, dir, "token", "--cancel", link.ID); code != 1 ||
		!strings.Contains(stderr, `minica: error: "alice" has an enrollment link (`+link.ID+`), not a bootstrap token`) ||
		!strings.Contains(stderr, "minica: hint: cancel it with minica enroll --cancel "+link.ID+"\n") {
		t.Errorf("token --cancel LINK-ID = exit %d:\n%s", code, stderr)
	}
	if dirHash(t, dir) != before {
		t.Errorf("a refused cancel changed the CA directory")
	}

	var cancelled made
	if err := json.Unmarshal([]byte(mustMinica(t, dir, "token", "--cancel", tok.ID, "--json")), &cancelled); err != nil {
		t.Fatal(err)
	}
	if cancelled.ID != tok.ID || cancelled.Name != "web1" || cancelled.Profile != "server" || cancelled.Status != "cancelled" || cancelled.Token != "" {
		t.Errorf("token --cancel ID --json = %+v; want web1's token cancelled, without the token", cancelled)
	}
	if list := mustMinica(t, dir, "token", "--list", "--json"); list != "" {
		t.Errorf("token --list --json after the cancel:\n%s", list)
	}
	if list := mustMinica(t, dir, "enroll", "--list", "--json"); !strings.Contains(list, `"name":"alice","status":"pending"`) {
		t.Errorf("enroll --list --json after the token's cancel:\n%s", list)
	}
}

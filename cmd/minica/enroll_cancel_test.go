package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// enroll --cancel takes the link's ID as well as its name, and --json
// tells what became of it; a cancelled link is gone from --list.
func TestEnrollCancelByID(t *testing.T) {
	t.Parallel()
	dir := newCADir(t)
	var made struct{ ID, Name, Status, URL string }
	if err := json.Unmarshal([]byte(mustMinica(t, dir, "enroll", "alice", "--base-url", "https://pki.example.com", "--json")), &made); err != nil {
		t.Fatal(err)
	}
	mustMinica(t, dir, "enroll", "bob", "--base-url", "https://pki.example.com", "--json")
	var cancelled struct{ ID, Name, Status, URL string }
	if err := json.Unmarshal([]byte(mustMinica(t, dir, "enroll", "--cancel", made.ID, "--json")), &cancelled); err != nil {
		t.Fatal(err)
	}
	if cancelled.ID != made.ID || cancelled.Name != "alice" || cancelled.Status != "cancelled" || cancelled.URL != "" {
		t.Errorf("enroll --cancel ID --json = %+v; want alice's link cancelled, without its URL", cancelled)
	}
	list := mustMinica(t, dir, "enroll", "--list", "--json")
	if strings.Contains(list, made.ID) || !strings.Contains(list, `"name":"bob","status":"pending"`) {
		t.Errorf("enroll --list --json after the cancel:\n%s", list)
	}
	if _, stderr, code := minica(t, dir, "enroll", "--cancel", made.ID); code != 1 || !strings.Contains(stderr, "is cancelled") {
		t.Errorf("a second cancel by ID = exit %d:\n%s", code, stderr)
	}
	if _, stderr, code := minica(t, dir, "enroll", "--cancel", "0123456789ab"); code != 1 || !strings.Contains(stderr, "no such enrollment") {
		t.Errorf("cancel of an unknown ID = exit %d:\n%s", code, stderr)
	}
}

package ca

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// nowhere is a store that refuses connections at once.
const nowhere = "postgres://minica@127.0.0.1:1/minica?sslmode=disable&connect_timeout=5"

// A store switch while a serve of the CA runs would split the database:
// serve goes on writing to the store it opened. MoveStore refuses it
// (ErrServeRunning) before it copies anything, leaving the settings as
// they were; once serve has stopped, it goes on to the copy (which fails
// here for a target that does not answer: cmd/minica's
// TestStoreSwitchWhileServing moves to a real PostgreSQL).
func TestMoveStoreRefusedWhileServing(t *testing.T) {
	c, _ := newTestCA(t, InitOptions{})
	target := nowhere
	serving, err := Open(c.Dir().Path())
	if err != nil {
		t.Fatal(err)
	}
	if err := serving.HoldServing(); err != nil {
		t.Fatalf("HoldServing: %v", err)
	}
	// A second serve of the directory may run beside the first.
	second, err := Open(c.Dir().Path())
	if err != nil {
		t.Fatal(err)
	}
	if err := second.HoldServing(); err != nil {
		t.Fatalf("HoldServing of a second serve: %v", err)
	}
	second.Close()
	settings, _ := os.ReadFile(c.Path(settingsFile))
	_, err = c.MoveStore(target)
	var running *ServeRunningError
	if !errors.Is(err, ErrServeRunning) || !errors.As(err, &running) || !strings.Contains(err.Error(), c.Dir().Path()) {
		t.Fatalf("MoveStore while serving = %v; want ServeRunningError naming the directory", err)
	}
	if after, _ := os.ReadFile(c.Path(settingsFile)); string(after) != string(settings) {
		t.Errorf("a refused MoveStore changed the settings:\n%s", after)
	}
	serving.Close()
	if _, err := c.MoveStore(target); err == nil || errors.Is(err, ErrServeRunning) || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("MoveStore once serve stopped = %v; want the copy's error", err)
	}
}

// A serve that opened the CA before a switch and registers after it
// would serve the old store: HoldServing refuses it.
func TestHoldServingAfterSwitch(t *testing.T) {
	c, _ := newTestCA(t, InitOptions{})
	late, err := Open(c.Dir().Path())
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	if err := c.SetStore(nowhere); err != nil { // what MoveStore records last
		t.Fatal(err)
	}
	if err := late.HoldServing(); !errors.Is(err, ErrStoreSwitched) {
		t.Fatalf("HoldServing after a switch = %v; want ErrStoreSwitched", err)
	}
}

//go:build interop

package pgtest_test

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"minica/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// Each test gets a database of its own, empty, on the one server.
func TestNewGivesFreshDatabases(t *testing.T) {
	a, b := pgtest.New(t), pgtest.New(t)
	if a == b {
		t.Fatalf("New() gave %q twice", a)
	}
	pgtest.Exec(t, a, "CREATE TABLE x (n int)")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 'x'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("second database sees the first one's table: n=%d err=%v", n, err)
	}
}

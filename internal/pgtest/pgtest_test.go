package pgtest_test

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/toolsift/toolsift/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestStart: each call is a new, empty database of its own on a server
// that answers.
func TestStart(t *testing.T) {
	ctx := context.Background()
	a, b := pgtest.Start(t), pgtest.Start(t)
	if a == b {
		t.Fatalf("two Starts returned the same database %s", a)
	}
	for _, u := range []string{a, b} {
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		var n int
		err = conn.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").Scan(&n)
		conn.Close(ctx)
		if err != nil || n != 0 {
			t.Fatalf("%s: %d tables, %v; want a new, empty database", u, n, err)
		}
	}
	conn, _ := pgx.Connect(ctx, a)
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE TABLE only_in_a (x int)"); err != nil {
		t.Fatal(err)
	}
	connB, _ := pgx.Connect(ctx, b)
	defer connB.Close(ctx)
	var n int
	if err := connB.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 'only_in_a'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("a table made in one test's database is seen in another's: %d, %v", n, err)
	}
}

// TestClusterRestart: a cluster of the test's own stops (connections
// refused) and starts again on the same data.
func TestClusterRestart(t *testing.T) {
	ctx := context.Background()
	c := pgtest.NewCluster(t)
	u := c.Database(t)
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE kept (x int); INSERT INTO kept VALUES (7)"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	c.Stop(t)
	if conn, err := pgx.Connect(ctx, u); err == nil {
		conn.Close(ctx)
		t.Fatal("connected to a stopped cluster")
	}
	c.Restart(t)
	conn, err = pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var x int
	if err := conn.QueryRow(ctx, "SELECT x FROM kept").Scan(&x); err != nil || x != 7 {
		t.Fatalf("after a restart: %d, %v; want the row written before", x, err)
	}
}

// TestExternalServer: with TOOLSIFT_TEST_POSTGRES set, Start's databases
// are made on that server and dropped at the test's end.
func TestExternalServer(t *testing.T) {
	ctx := context.Background()
	c := pgtest.NewCluster(t)
	t.Setenv(pgtest.Env, c.URL("postgres"))
	var name string
	t.Run("uses", func(t *testing.T) {
		u := pgtest.Start(t)
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&name); err != nil {
			t.Fatal(err)
		}
	})
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil || n != 0 {
		t.Fatalf("database %q of the external server: %d left after its test, %v; want dropped", name, n, err)
	}
}

package authn_test

import (
	"context"
	"testing"

	"github.com/toolsift/toolsift/store/postgres"
)

// openPostgres opens a store/postgres Store over url (a database
// pgtest.Start or pgtest.Cluster.Database gave), failing tb if it cannot,
// and closes it when tb ends.
func openPostgres(tb testing.TB, url string) *postgres.Store {
	tb.Helper()
	s, err := postgres.Open(context.Background(), url, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

package pgtest

import (
	"context"
	"testing"

	"github.com/toolsift/toolsift/store/postgres"
)

// Open opens a store/postgres Store over url (a database Start or
// Cluster.Database gave), failing tb if it cannot, and closes it when tb
// ends.
func Open(tb testing.TB, url string) *postgres.Store {
	tb.Helper()
	s, err := postgres.Open(context.Background(), url, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

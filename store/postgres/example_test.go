package postgres_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"

	"github.com/toolsift/toolsift/store/postgres"
)

// A replica opens the shared store, writes a trust record and learns of
// the other replicas' changes.
func Example() {
	ctx := context.Background()
	s, err := postgres.Open(ctx, "postgres://toolsift:secret@db.internal:5432/toolsift", &postgres.Options{Logger: slog.Default()})
	if err != nil {
		log.Fatal(err) // names postgres://REDACTED@db.internal:5432/toolsift
	}
	defer s.Close()
	if err := s.Put(ctx, "trust/memory-3c4d.json", []byte(`{"accepted":"1a2b"}`)); err != nil {
		log.Fatal(err) // only once ctx ended: a lost server is waited for
	}
	go s.Watch(ctx, "trust/", func() {
		fmt.Println("watching: read the trust records now") // what was written before may not be reported
	}, func(key string) {
		fmt.Println("another replica changed", key) // read it again
	})
}

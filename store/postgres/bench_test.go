package postgres_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/toolsift/toolsift/internal/pgtest"
	"github.com/toolsift/toolsift/store"
)

// BenchmarkStore compares the three stores on the operations toolsift
// makes most: Get and Put of a 4 KiB value (a trust record, a tool list
// entry) and an uncontended Lock + unlock. Postgres is the test cluster
// over a unix socket (fsync off: a server's disk is not measured).
//
//	go test -run '^$' -bench BenchmarkStore -benchtime 2000x ./store/postgres/
func BenchmarkStore(b *testing.B) {
	ctx := context.Background()
	value := bytes.Repeat([]byte("v"), 4<<10)
	stores := []struct {
		name string
		open func(b *testing.B) store.Store
	}{
		{"memory", func(*testing.B) store.Store { return store.NewMemory() }},
		{"dir", func(b *testing.B) store.Store {
			s, err := store.NewDir(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
		{"postgres", func(b *testing.B) store.Store { return open(b, pgtest.Start(b), nil) }},
	}
	for _, st := range stores {
		b.Run(st.name, func(b *testing.B) {
			s := st.open(b)
			defer s.Close()
			if err := s.Put(ctx, "trust/server-1a2b.json", value); err != nil {
				b.Fatal(err)
			}
			b.Run("get", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := s.Get(ctx, "trust/server-1a2b.json"); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("put", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if err := s.Put(ctx, "trust/server-1a2b.json", value); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("lock", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					unlock, err := s.Lock(ctx, "locks/server-1a2b")
					if err != nil {
						b.Fatal(err)
					}
					unlock()
				}
			})
		})
	}
}

// BenchmarkGetBounded: a kind's size limit over PostgreSQL. "get" is
// what store.GetBounded did before the Store was a store.BoundedGetter
// (the whole value read, then its length checked), "bounded" the
// Store's GetBounded (the length checked in the server, the value sent
// only within the limit): a value over the limit (8 MiB at a 1 MiB
// limit) and one within it (4 KiB).
//
//	go test -run '^$' -bench BenchmarkGetBounded -benchtime 20x -count 3 ./store/postgres/
func BenchmarkGetBounded(b *testing.B) {
	ctx := context.Background()
	s := open(b, pgtest.Start(b), nil)
	const limit = 1 << 20
	for _, v := range []struct {
		name string
		size int
	}{{"over", 8 << 20}, {"within", 4 << 10}} {
		key := "catalog/" + v.name + ".json"
		if err := s.Put(ctx, key, bytes.Repeat([]byte("v"), v.size)); err != nil {
			b.Fatal(err)
		}
		check := func(val []byte, err error) {
			if v.size > limit && err == nil || v.size <= limit && (err != nil || len(val) != v.size) {
				b.Fatalf("%d bytes, %v", len(val), err)
			}
		}
		b.Run(v.name+"/get", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				val, err := s.Get(ctx, key)
				if err == nil && len(val) > limit {
					val, err = nil, store.ErrTooLarge
				}
				check(val, err)
			}
		})
		b.Run(v.name+"/bounded", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				check(s.GetBounded(ctx, key, limit))
			}
		})
	}
}

package postgres_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolsift/toolsift/internal/pgtest"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/store/postgres"
)

// TestTakeTokenShared: 40 takers on each of two Stores of one database
// race for a bucket of 20 an hour (burst 20): exactly 20 get a token, and
// every other is told to retry in about an interval (3 min: no token
// comes back while the test runs, so the counts are exact); another key
// is its own bucket; a token given back is taken once more, and the
// bucket never holds more than its burst however many are given back.
func TestTakeTokenShared(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Start(t)
	a, b := open(t, url, nil), open(t, url, nil)
	const burst, interval = 20, time.Hour / 20
	var taken, refused atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	errs := make(chan error, 80)
	for i := range 80 {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			retry, err := s.TakeToken(ctx, "alice", 1, interval, burst)
			switch {
			case err != nil:
				errs <- err
			case retry == 0:
				taken.Add(1)
			case retry > interval || retry < interval-time.Since(start)-time.Second:
				errs <- errors.New("retry " + retry.String() + ", want about " + interval.String())
			default:
				refused.Add(1)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if taken.Load() != burst || refused.Load() != 80-burst {
		t.Fatalf("%d taken, %d refused of 80 takers; want %d taken", taken.Load(), refused.Load(), burst)
	}
	if retry, err := b.TakeToken(ctx, "bob", 1, interval, burst); err != nil || retry != 0 {
		t.Errorf("bob's first take: %v, %v; want his own bucket, full", retry, err)
	}

	// Small buckets raced for while fresh: a take that waited for
	// another's row lock times itself after it, never before (which would
	// refuse the second token of a bucket of 2).
	for round := range 20 {
		key := fmt.Sprint("fresh-", round)
		var got atomic.Int64
		var wg sync.WaitGroup
		for i := range 4 {
			s := a
			if i%2 == 1 {
				s = b
			}
			wg.Go(func() {
				retry, err := s.TakeToken(ctx, key, 1, time.Hour, 2)
				switch {
				case err != nil:
					t.Error(err)
				case retry == 0:
					got.Add(1)
				case retry < time.Hour-time.Since(start)-time.Second:
					t.Errorf("%s: retry %v, want about an hour", key, retry)
				}
			})
		}
		wg.Wait()
		if got.Load() != 2 {
			t.Errorf("%s: %d of 4 racing takers of a fresh bucket of 2 got a token, want 2", key, got.Load())
		}
	}

	// Given back: one more take, then refused again.
	if retry, err := a.TakeToken(ctx, "alice", -1, interval, burst); err != nil || retry != 0 {
		t.Fatalf("give: %v, %v", retry, err)
	}
	if retry, err := b.TakeToken(ctx, "alice", 1, interval, burst); err != nil || retry != 0 {
		t.Errorf("the take after a give: %v, %v; want a token", retry, err)
	}
	if retry, err := a.TakeToken(ctx, "alice", 1, interval, burst); err != nil || retry == 0 {
		t.Errorf("the take after that: %v, %v; want refused", retry, err)
	}
	// More given back than ever taken: still burst at most.
	for range burst + 5 {
		if _, err := a.TakeToken(ctx, "carol", -1, interval, burst); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for {
		retry, err := b.TakeToken(ctx, "carol", 1, interval, burst)
		if err != nil {
			t.Fatal(err)
		}
		if retry != 0 {
			break
		}
		n++
	}
	if n != burst {
		t.Errorf("%d tokens taken after %d given back to a fresh bucket, want the burst, %d", n, burst+5, burst)
	}
}

// TestTakeTokenRetry: burst 2, a token an hour: two at once, then the
// third is told to retry in an hour (less the time since the first); n
// tokens at once need n intervals' worth; bad arguments are errors naming
// the one at fault.
func TestTakeTokenRetry(t *testing.T) {
	ctx := context.Background()
	s := open(t, pgtest.Start(t), nil)
	start := time.Now()
	for i := range 2 {
		if retry, err := s.TakeToken(ctx, "k", 1, time.Hour, 2); err != nil || retry != 0 {
			t.Fatalf("take %d: %v, %v", i+1, retry, err)
		}
	}
	retry, err := s.TakeToken(ctx, "k", 1, time.Hour, 2)
	if err != nil || retry > time.Hour || retry < time.Hour-time.Since(start)-time.Second {
		t.Fatalf("the third take: retry %v, %v; want about an hour", retry, err)
	}
	// Two at once of a fresh bucket of 3: then one more, then refused
	// with two intervals to wait for two.
	if retry, err := s.TakeToken(ctx, "m", 2, time.Hour, 3); err != nil || retry != 0 {
		t.Fatalf("two of three: %v, %v", retry, err)
	}
	retry, err = s.TakeToken(ctx, "m", 2, time.Hour, 3)
	if err != nil || retry > time.Hour || retry < time.Hour-time.Since(start)-time.Second {
		t.Fatalf("two more of the one left: retry %v, %v; want about an hour (one more token)", retry, err)
	}
	if retry, err := s.TakeToken(ctx, "m", 1, time.Hour, 3); err != nil || retry != 0 {
		t.Fatalf("the one left: %v, %v", retry, err)
	}
	retry, err = s.TakeToken(ctx, "m", 2, time.Hour, 3)
	if err != nil || retry > 2*time.Hour || retry < 2*time.Hour-time.Since(start)-time.Second {
		t.Fatalf("two of none: retry %v, %v; want about two hours", retry, err)
	}

	for _, tc := range []struct {
		n        int
		interval time.Duration
		burst    int
		says     string
	}{
		{0, time.Second, 1, "n is 0"},
		{1, 0, 1, "interval 0s"},
		{1, time.Second, 0, "burst 0"},
		{3, time.Second, 2, "3 tokens from a bucket of 2"},
	} {
		if _, err := s.TakeToken(ctx, "k", tc.n, tc.interval, tc.burst); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("TakeToken(n %d, interval %v, burst %d) = %v, want an error saying %q", tc.n, tc.interval, tc.burst, err, tc.says)
		}
	}
	s.Close()
	if _, err := s.TakeToken(ctx, "k", 1, time.Hour, 2); err == nil {
		t.Error("TakeToken after Close: no error")
	}
}

// TestTakeTokenSweep: the table keeps the hash of a bucket's name, never
// the name; a bucket full again (its row's time past) is deleted by the
// sweep, one still refilling is kept.
func TestTakeTokenSweep(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Start(t)
	s := open(t, url, nil)
	if _, err := s.TakeToken(ctx, "user alice", 1, time.Hour, 5); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TakeToken(ctx, "user bob", 1, time.Millisecond, 1); err != nil {
		t.Fatal(err)
	}
	conn := connect(t, url)
	var keys [][]byte
	rows, err := conn.Query(ctx, `SELECT key FROM toolsift_rate_limit ORDER BY key`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k []byte
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	alice, bob := sha256.Sum256([]byte("user alice")), sha256.Sum256([]byte("user bob"))
	if len(keys) != 2 || !(string(keys[0]) == string(alice[:]) || string(keys[1]) == string(alice[:])) ||
		!(string(keys[0]) == string(bob[:]) || string(keys[1]) == string(bob[:])) {
		t.Fatalf("toolsift_rate_limit keys %x, want the SHA-256 of the two names", keys)
	}
	// bob's bucket is full a millisecond later, by the server's clock.
	var past bool
	for !past {
		if err := conn.QueryRow(ctx, `SELECT bool_and(tat < clock_timestamp()) FROM toolsift_rate_limit WHERE key = $1`, bob[:]).Scan(&past); err != nil {
			t.Fatal(err)
		}
	}
	n, err := postgres.Sweep(s)
	if err != nil || n != 1 {
		t.Fatalf("Sweep = %d, %v; want bob's row deleted", n, err)
	}
	var left []byte
	if err := conn.QueryRow(ctx, `SELECT key FROM toolsift_rate_limit`).Scan(&left); err != nil || string(left) != string(alice[:]) {
		t.Fatalf("after the sweep: %x, %v; want alice's row alone", left, err)
	}
	// A swept bucket is full: bob takes again.
	if retry, err := s.TakeToken(ctx, "user bob", 1, time.Millisecond, 1); err != nil || retry != 0 {
		t.Errorf("bob after the sweep: %v, %v", retry, err)
	}

	// The sweep a TakeToken starts, in the background, once a minute:
	// bob's row goes, alice's (and carol's, the take that started it)
	// stay.
	for past = false; !past; {
		if err := conn.QueryRow(ctx, `SELECT bool_and(tat < clock_timestamp()) FROM toolsift_rate_limit WHERE key = $1`, bob[:]).Scan(&past); err != nil {
			t.Fatal(err)
		}
	}
	postgres.SweepSoon(s)
	if _, err := s.TakeToken(ctx, "user carol", 1, time.Hour, 5); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(testenv.WaitLimit())
	for {
		var rows int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM toolsift_rate_limit`).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		if rows == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d rows %v after a TakeToken started a sweep, want 2 (alice's, carol's)", rows, testenv.WaitLimit())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var _ store.RateLimiter = (*postgres.Store)(nil)

// TestMigrateToRateLimits: a database of schema version 1 (the toolsift
// before shared rate limits) is migrated at Open: its values stay, and
// the table of the buckets is made.
func TestMigrateToRateLimits(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Start(t)
	s := open(t, url, nil)
	if err := s.Put(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	conn := connect(t, url)
	for _, stmt := range []string{`DROP TABLE toolsift_rate_limit`, `UPDATE toolsift_store_schema SET version = 1`} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	s = open(t, url, nil)
	if v, err := s.Get(ctx, "k"); err != nil || string(v) != "v" {
		t.Errorf("Get after the migration: %q, %v", v, err)
	}
	if retry, err := s.TakeToken(ctx, "k", 1, time.Hour, 1); err != nil || retry != 0 {
		t.Errorf("TakeToken after the migration: %v, %v", retry, err)
	}
	var version int
	if err := conn.QueryRow(ctx, `SELECT version FROM toolsift_store_schema`).Scan(&version); err != nil || version != 2 {
		t.Errorf("schema version %d, %v; want 2", version, err)
	}
}

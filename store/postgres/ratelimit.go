package postgres

import (
	"context"
	"crypto/sha256"
	"fmt"
	"time"
)

// sweepEvery is how often, at most, a Store deletes the dead rows of
// toolsift_rate_limit: the first TakeToken after it starts a sweep.
const sweepEvery = time.Minute

// take is TakeToken's statement for n > 0: GCRA on the bucket's
// theoretical arrival time (tat). A bucket whose tat is at most now is
// full; taking n moves tat to max(tat, now) + n·interval, allowed while
// that is within burst·interval of now. A fresh row is inserted (n ≤
// burst, checked before). now is the database's clock_timestamp() read
// once the row is locked, after the take before it committed, so that
// it never runs behind the now of that take (a now read at the
// statement's start could, for a statement that waited on the lock, and
// refuse a token that is there). A refused take leaves tat and sets took
// false, so that the row returned says which it was, with tat, under the
// row's lock. $1 key, $2 n·interval and $3 burst·interval in
// microseconds.
const take = `INSERT INTO toolsift_rate_limit AS l (key, tat, took)
VALUES ($1, clock_timestamp() + $2::bigint * interval '1 microsecond', true)
ON CONFLICT (key) DO UPDATE SET (took, tat) = (
	SELECT o.ok, CASE WHEN o.ok THEN greatest(l.tat, n.now) + $2::bigint * interval '1 microsecond' ELSE l.tat END
	FROM (SELECT clock_timestamp() AS now) n,
	LATERAL (SELECT greatest(l.tat, n.now) <= n.now + ($3::bigint - $2::bigint) * interval '1 microsecond' AS ok) o
)
RETURNING l.took, (extract(epoch FROM l.tat - clock_timestamp()) * 1000000)::bigint + $2::bigint - $3::bigint`

// give is TakeToken's statement for n < 0: tat moves back by -n
// intervals; one at or before now is a full bucket, however far back.
// $1 key, $2 -n·interval in microseconds.
const give = `UPDATE toolsift_rate_limit SET tat = tat - $2::bigint * interval '1 microsecond' WHERE key = $1`

// TakeToken implements store.RateLimiter with one statement on
// toolsift_rate_limit, timed by the server's clock (clock_timestamp()),
// so the replicas' clocks need not agree and two of them never both take
// the last token: the row's lock orders the takers. The table keeps the
// SHA-256 of key, never key. A bucket's row is dead once the bucket is
// full again; at most once a minute a TakeToken starts a DELETE of the
// dead rows in the background (Close waits for it), so the table holds
// about the buckets used within their refill time. TakeToken does not
// retry (but a take meeting a lost pooled connection is tried once more
// on another, as Get is, which can take twice and never lets too many
// through): a server that cannot be reached fails it at once, wrapping
// ErrUnavailable (the caller keeps its own bucket meanwhile), and ctx
// bounds the wait for a slow one.
func (s *Store) TakeToken(ctx context.Context, key string, n int, interval time.Duration, burst int) (time.Duration, error) {
	if err := s.checkOpen(ctx); err != nil {
		return 0, err
	}
	switch {
	case n == 0:
		return 0, fmt.Errorf("postgres: take token: n is 0, want 1 or more (or less than 0 to give back)")
	case interval < time.Microsecond:
		return 0, fmt.Errorf("postgres: take token: interval %v, want at least 1µs", interval)
	case burst < 1:
		return 0, fmt.Errorf("postgres: take token: burst %d, want 1 or more", burst)
	case n > burst:
		return 0, fmt.Errorf("postgres: take token: %d tokens from a bucket of %d: never there", n, burst)
	}
	h := sha256.Sum256([]byte(key))
	us := interval.Microseconds()
	s.maybeSweep()
	if n < 0 {
		// Not tried twice, as a take is: a give whose answer was lost may
		// have been made, and two would let one request too many through.
		if _, err := s.pool.Exec(ctx, give, h[:], int64(-n)*us); err != nil {
			return 0, s.fail(ctx, "give token", err)
		}
		s.up()
		return 0, nil
	}
	var ok bool
	var retry int64
	err := s.read(ctx, func() error {
		return s.pool.QueryRow(ctx, take, h[:], int64(n)*us, int64(burst)*us).Scan(&ok, &retry)
	})
	if err != nil {
		return 0, s.fail(ctx, "take token", err)
	}
	s.up()
	if ok {
		return 0, nil
	}
	return max(time.Duration(retry)*time.Microsecond, time.Microsecond), nil
}

// maybeSweep starts a sweep when none has started for sweepEvery.
func (s *Store) maybeSweep() {
	now := time.Now().UnixNano()
	last := s.swept.Load()
	if now-last < int64(sweepEvery) || !s.swept.CompareAndSwap(last, now) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.sweeping.Add(1)
	go func() {
		defer s.sweeping.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		go func() { // Close ends the sweep
			select {
			case <-s.done:
				cancel()
			case <-ctx.Done():
			}
		}()
		if _, err := s.sweep(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("postgres: sweep of the dead rate-limit rows failed", "store", s.where, "err", s.text(err))
		}
	}()
}

// sweep deletes the rows of full buckets and returns how many it deleted.
// A take that updated a row meanwhile keeps it: the DELETE checks the
// row it locks again.
func (s *Store) sweep(ctx context.Context) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM toolsift_rate_limit WHERE tat <= clock_timestamp()`)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

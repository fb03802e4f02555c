package postgres

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Watch implements store.Watcher with LISTEN on a connection of its own
// (not the pool's). It calls f with the key of every Put or Delete under
// prefix that another Store (another replica, or another Store value in
// this process) commits after Watch is listening; this Store's own writes
// are not reported. f runs on Watch's goroutine, in commit order.
//
// Watch starts listening one connection and one LISTEN after it is called
// (later if the server is down then); a write committed before is not
// reported. Once LISTEN is in effect (PostgreSQL delivers the
// notifications of every transaction that commits after it), Watch calls
// ready, once, and only then any f: the caller reads the state it keeps
// in or after ready (store.Watcher), so no write falls between its read
// and the watch.
//
// When the listening connection is lost (the server restarts, the
// network drops) or cannot be made, Watch logs it once (and its
// recovery once, apart from the other operations' log lines), reconnects with
// backoff and, once listening again, calls f for every key under prefix
// that was added, replaced or deleted meanwhile: it compares each key's
// write number (rev) with what it last knew, and leaves out a key whose
// current state is this Store's own last write of it. A catch-up may
// repeat a key already reported; f is a signal to read a key again, not
// a count of changes. No write by another Store is missed, unless a later
// write of the same key by this Store replaced it.
//
// A listening connection that dies silently (a TCP peer gone without a
// reset) is noticed by TCP keepalive, which Go's dialer turns on (about
// two and a half minutes with its defaults); a server that shuts down or
// restarts ends it at once.
//
// Watch returns nil when the Store is closed, ctx's error when ctx ends,
// and an error at once for an invalid prefix.
func (s *Store) Watch(ctx context.Context, prefix string, ready func(), f func(key string)) error {
	if err := checkPrefix(prefix); err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.watching.Add(1)
	s.mu.Unlock()
	defer s.watching.Done()
	defer s.watchPrefix(prefix)() // before the first listing: see wrote

	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	end := func() error {
		if err := parent.Err(); err != nil {
			return err
		}
		return nil // closed
	}

	var known map[string]int64 // key → rev when last listed or notified; nil before the first listing
	down := false              // the loss is logged, the recovery not yet
	wait := minBackoff
	for {
		conn, err := s.listen(ctx)
		if err == nil {
			var now map[string]int64
			now, err = s.revs(ctx, conn, prefix)
			if err == nil {
				if down {
					down = false
					s.log.Info("postgres: watch listening again; reporting what changed meanwhile", "store", s.where, "prefix", prefix)
				}
				if known != nil {
					for _, key := range changed(known, now) {
						if !s.ours(key, now[key]) {
							f(key)
						}
					}
				} else if ready != nil {
					ready() // the first LISTEN is in effect
				}
				known = now
				wait = minBackoff
				err = s.receive(ctx, conn, prefix, known, f)
			}
			conn.Close(context.Background())
		}
		if ctx.Err() != nil {
			return end()
		}
		// Any other error is retried: a watch is a replica's link to the
		// others, and ends only with its ctx or its Store. Its loss and
		// recovery are logged apart from the pool's: a database may refuse
		// new connections while pooled sessions still work.
		if !down {
			down = true
			s.log.Warn("postgres: watch lost its connection; reconnecting", "store", s.where, "prefix", prefix, "err", s.text(err))
		}
		select {
		case <-ctx.Done():
			return end()
		case <-time.After(jitter(wait)):
		}
		wait = min(2*wait, maxBackoff)
	}
}

// listen opens a connection of its own and listens on the channel.
func (s *Store) listen(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, s.conn.Copy())
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+channel); err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	return conn, nil
}

// revs lists the write number of every key under prefix.
func (s *Store) revs(ctx context.Context, conn *pgx.Conn, prefix string) (map[string]int64, error) {
	var rows pgx.Rows
	var err error
	if prefix == "" {
		rows, err = conn.Query(ctx, `SELECT key, rev FROM toolsift_store`)
	} else {
		rows, err = conn.Query(ctx, `SELECT key, rev FROM toolsift_store WHERE key >= $1 AND key < $2`, prefix, successor(prefix))
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	revs := map[string]int64{}
	for rows.Next() {
		var key string
		var rev int64
		if err := rows.Scan(&key, &rev); err != nil {
			return nil, err
		}
		revs[key] = rev
	}
	return revs, rows.Err()
}

// changed returns, sorted, the keys added, replaced or deleted between
// two listings.
func changed(before, after map[string]int64) []string {
	var keys []string
	for k, rev := range after {
		if before[k] != rev {
			keys = append(keys, k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// receive reports notifications until the connection fails or ctx ends,
// keeping known up to date.
func (s *Store) receive(ctx context.Context, conn *pgx.Conn, prefix string, known map[string]int64, f func(string)) error {
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		id, rest, ok1 := strings.Cut(n.Payload, " ")
		revText, key, ok2 := strings.Cut(rest, " ")
		rev, err := strconv.ParseInt(revText, 10, 64)
		if !ok1 || !ok2 || err != nil {
			continue // not a toolsift store's: someone else uses the channel
		}
		if !strings.HasPrefix(key, prefix) {
			continue
		}
		if rev == 0 {
			delete(known, key)
		} else {
			known[key] = rev // notifications come in commit order: the last is current
		}
		if id != s.id {
			f(key)
		}
	}
}

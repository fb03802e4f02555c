package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolsift/toolsift/store"
)

// ErrUnavailable is wrapped by the error of Open when the server cannot
// be reached, by a Get or List that failed because it could not be
// reached (a caller serves from what it holds in memory), and by a Put,
// Delete or Lock whose ctx ended while they waited for it (with ctx's
// error).
var ErrUnavailable = errors.New("postgres: server unavailable")

// ErrOptions is wrapped by the error of Open for a URL or options it
// refuses.
var ErrOptions = errors.New("postgres: invalid options")

// Options configure a Store. The zero value (or nil) is the default.
type Options struct {
	// Logger receives one warning when the server is lost (writes then
	// retry) and one info line when it is back, and a warning when an
	// unlock finds its lock gone with its connection; nil discards them.
	// Lines name the store by its URL without the password.
	Logger *slog.Logger
}

// defaultMaxConns is the pool size when the URL sets no pool_max_conns:
// each held Lock keeps a connection, so pgx's default (4, or the CPUs)
// would let a few locks starve the reads their holders make.
const defaultMaxConns = 16

// Store is a store.Store, a store.Watcher and a store.RateLimiter in a PostgreSQL database,
// shared by every replica given the same URL. It is safe for concurrent
// use.
type Store struct {
	pool    *pgxpool.Pool
	conn    *pgx.ConnConfig // for Watch's own connections
	id      string          // this Store's instance id, in its notifications
	where   string          // the URL without its password, for errors and logs
	secrets []string        // the URL's password, to remove from others' messages
	log     *slog.Logger

	down atomic.Bool // the last operation lost the server; recovery not yet logged

	swept    atomic.Int64   // when the last sweep of toolsift_rate_limit started (UnixNano)
	sweeping sync.WaitGroup // running sweeps: Close waits for them

	mu       sync.Mutex
	closed   bool
	done     chan struct{}              // closed by Close: ends watches and lock waits
	held     map[*pgxpool.Conn]struct{} // connections holding a Lock
	mine     map[string]int64           // key → rev of this Store's last write of it (0: deleted), under a watched prefix only
	watched  map[string]int             // prefix → running Watch calls of it: wrote records only under these
	watching sync.WaitGroup             // running Watch calls
}

var (
	_ store.Store         = (*Store)(nil)
	_ store.Watcher       = (*Store)(nil)
	_ store.BoundedGetter = (*Store)(nil)
	_ store.PrefixDeleter = (*Store)(nil)
	_ store.RateLimiter   = (*Store)(nil)
)

// Open connects to the PostgreSQL database at url (postgres:// or
// postgresql://, with pgx's parameters, such as pool_max_conns) and
// creates or migrates its tables. An unreachable server is an error
// wrapping ErrUnavailable, a server that answers but refuses the URL's
// role, password or database, or the tables to that role, one wrapping
// ErrRefused with the fix to apply; both name url without its password.
// Open does not retry (a replica that cannot reach its store at start
// should say so).
func Open(ctx context.Context, url string, opts *Options) (*Store, error) {
	if opts == nil {
		opts = &Options{}
	}
	secret := secrets(url)
	where := redactURL(url)
	if !strings.HasPrefix(url, "postgres://") && !strings.HasPrefix(url, "postgresql://") {
		return nil, fmt.Errorf("%w: store URL %s: want postgres://user:password@host:port/database", ErrOptions, where)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// Not wrapped: pgx's parse error keeps the whole URL.
		return nil, fmt.Errorf("%w: store URL %s: %s", ErrOptions, where, scrub(secret, err.Error()))
	}
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = defaultMaxConns
	}
	// An operator's pg_stat_activity tells toolsift's sessions apart.
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "toolsift"
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	watchConn := cfg.ConnConfig.Copy()
	watchConn.RuntimeParams["application_name"] += " watch"
	s := &Store{
		conn:    watchConn,
		id:      fmt.Sprintf("%016x", rand.Uint64()),
		where:   where,
		secrets: secret,
		log:     log,
		done:    make(chan struct{}),
		held:    map[*pgxpool.Conn]struct{}{},
		mine:    map[string]int64{},
		watched: map[string]int{},
	}
	s.swept.Store(time.Now().UnixNano()) // the first sweep a minute after Open
	s.pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %s", ErrUnavailable, where, s.text(err))
	}
	user, database := cfg.ConnConfig.User, cfg.ConnConfig.Database
	if database == "" {
		database = user // the server's default
	}
	if err := s.pool.Ping(ctx); err != nil {
		s.pool.Close()
		if fix, ok := refusal(err, user, database); ok {
			return nil, fmt.Errorf("%w: %s: %s: %s", ErrRefused, where, s.text(err), fix)
		}
		return nil, fmt.Errorf("%w: %s: %s", ErrUnavailable, where, s.text(err))
	}
	if err := migrate(ctx, s.pool); err != nil {
		s.pool.Close()
		if fix, ok := refusal(err, user, database); ok {
			return nil, fmt.Errorf("%w: %s: %s: %s", ErrRefused, where, s.text(err), fix)
		}
		return nil, fmt.Errorf("postgres: %s: %s", where, s.text(err))
	}
	return s, nil
}

// String returns the Store's URL without its password, for messages.
func (s *Store) String() string { return s.where }

// text is err's message with the URL's password removed. pgx's own
// errors name the user and database, not the password; this is the guard
// for whatever else quotes the URL.
func (s *Store) text(err error) string {
	return scrub(s.secrets, err.Error())
}

// Get implements store.Store. A server that cannot be reached is not
// waited for: the error wraps ErrUnavailable.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	if err := s.check(ctx, key); err != nil {
		return nil, err
	}
	value, size, err := s.get(ctx, key, store.MaxValueBytes)
	if err != nil {
		return nil, err
	}
	if value == nil {
		return nil, fmt.Errorf("postgres: get %s: the stored value has %d bytes, over store.MaxValueBytes", key, size)
	}
	return value, nil
}

// GetBounded implements store.BoundedGetter: a value over max bytes is
// refused by its length, which the server reads from the row, and never
// sent: one statement returns the length and, only when it is within max,
// the value. The error wraps store.ErrTooLarge and names the key and both
// sizes.
func (s *Store) GetBounded(ctx context.Context, key string, max int) ([]byte, error) {
	if err := s.check(ctx, key); err != nil {
		return nil, err
	}
	if max <= 0 {
		return nil, fmt.Errorf("postgres: get %s: limit %d, want a positive number of bytes", key, max)
	}
	max = min(max, store.MaxValueBytes)
	value, size, err := s.get(ctx, key, max)
	if err != nil {
		return nil, err
	}
	if value == nil {
		return nil, fmt.Errorf("%w: %s: %d bytes, over the limit of %d", store.ErrTooLarge, key, size, max)
	}
	return value, nil
}

// get reads the value under key and its length; the value is nil, and not
// sent by the server, when it has more than max bytes.
func (s *Store) get(ctx context.Context, key string, max int) ([]byte, int64, error) {
	var value []byte
	var size int64
	err := s.read(ctx, func() error {
		return s.pool.QueryRow(ctx,
			`SELECT CASE WHEN octet_length(value) <= $2 THEN value END, octet_length(value) FROM toolsift_store WHERE key = $1`,
			key, max).Scan(&value, &size)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		s.up()
		return nil, 0, fmt.Errorf("%w: %s", store.ErrNotFound, key)
	}
	if err != nil {
		return nil, 0, s.fail(ctx, "get "+key, err)
	}
	s.up()
	if size > int64(max) {
		return nil, size, nil
	}
	if value == nil {
		value = []byte{}
	}
	return value, size, nil
}

// Put implements store.Store: an upsert that notifies watchers in the
// same transaction. While the server is unreachable Put retries with
// backoff until it commits or ctx ends; it returns nil only after the
// commit.
func (s *Store) Put(ctx context.Context, key string, value []byte) error {
	if err := s.check(ctx, key); err != nil {
		return err
	}
	if len(value) > store.MaxValueBytes {
		return fmt.Errorf("postgres: put %s: %d bytes, over store.MaxValueBytes", key, len(value))
	}
	if value == nil {
		value = []byte{} // NULL is not a value
	}
	return s.retry(ctx, "put "+key, func() error {
		var rev int64
		err := s.pool.QueryRow(ctx, `WITH w AS (
	INSERT INTO toolsift_store (key, value, rev, updated_at) VALUES ($1, $2, nextval('toolsift_store_rev'), now())
	ON CONFLICT (key) DO UPDATE SET value = excluded.value, rev = excluded.rev, updated_at = excluded.updated_at
	RETURNING key, rev)
SELECT w.rev, pg_notify('`+channel+`', $3::text || ' ' || w.rev || ' ' || w.key)::text FROM w`, key, value, s.id).Scan(&rev, nil)
		if err == nil {
			s.wrote(key, rev)
		}
		return err
	})
}

// wrote records that this Store's last write of key has rev (0: it
// deleted key), so that Watch's catch-up leaves out what it wrote. Only a
// key under the prefix of a running Watch is recorded: a catch-up asks
// only about those, and a Store that writes many keys no one watches (the
// audit log, a record per call) must not keep one entry each for its
// life. A Watch adds its prefix before it lists the keys it compares
// later, so a write it could ask about is recorded (watchPrefix).
func (s *Store) wrote(key string, rev int64) {
	s.mu.Lock()
	s.record(key, rev)
	s.mu.Unlock()
}

// record is wrote with s.mu held.
func (s *Store) record(key string, rev int64) {
	if s.covered(key) {
		s.mine[key] = rev
	}
}

// covered reports whether key is under a running Watch's prefix; s.mu is
// held.
func (s *Store) covered(key string) bool {
	for p := range s.watched {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// watchPrefix adds prefix to the watched ones, for a Watch that starts;
// its release takes it away when that Watch ends, and with it the own
// writes no other running Watch's prefix covers.
func (s *Store) watchPrefix(prefix string) (release func()) {
	s.mu.Lock()
	s.watched[prefix]++
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.watched[prefix]--; s.watched[prefix] > 0 {
			return
		}
		delete(s.watched, prefix)
		for key := range s.mine {
			if !s.covered(key) {
				delete(s.mine, key)
			}
		}
	}
}

// ours reports whether the state of key with rev (0: absent) is the one
// this Store's own last write of it left.
func (s *Store) ours(key string, rev int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	mine, ok := s.mine[key]
	return ok && mine == rev
}

// Delete implements store.Store, retrying as Put does.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := s.check(ctx, key); err != nil {
		return err
	}
	return s.retry(ctx, "delete "+key, func() error {
		_, err := s.pool.Exec(ctx, `WITH d AS (DELETE FROM toolsift_store WHERE key = $1 RETURNING key)
SELECT pg_notify('`+channel+`', $2::text || ' 0 ' || d.key) FROM d`, key, s.id)
		if err == nil {
			s.wrote(key, 0)
		}
		return err
	})
}

// DeletePrefix implements store.PrefixDeleter with one statement: a
// DELETE of the primary key's range (as List's) that notifies watchers of
// each deleted key, as Delete does, in the same transaction, so it is
// atomic: readers and watchers see all the keys go at once, and a Put
// under prefix committed meanwhile is either deleted or kept. It retries
// as Delete does; a try whose commit happened but whose answer was lost
// is made again and finds nothing, so the count is of the keys the
// answered try deleted.
func (s *Store) DeletePrefix(ctx context.Context, prefix string) (int, error) {
	if err := s.checkOpen(ctx); err != nil {
		return 0, err
	}
	if prefix == "" {
		return 0, fmt.Errorf("%w: the empty prefix: DeletePrefix never deletes every key", store.ErrKey)
	}
	if err := checkPrefix(prefix); err != nil {
		return 0, err
	}
	var keys []string
	err := s.retry(ctx, fmt.Sprintf("delete prefix %q", prefix), func() error {
		rows, err := s.pool.Query(ctx, `WITH d AS (DELETE FROM toolsift_store WHERE key >= $1 AND key < $2 RETURNING key)
SELECT d.key, pg_notify('`+channel+`', $3::text || ' 0 ' || d.key)::text FROM d`, prefix, successor(prefix), s.id)
		if err != nil {
			return err
		}
		keys, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (string, error) {
			var key string
			err := row.Scan(&key, nil)
			return key, err
		})
		return err
	})
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	for _, key := range keys {
		s.record(key, 0) // as Delete's wrote(key, 0)
	}
	s.mu.Unlock()
	return len(keys), nil
}

// List implements store.Store with a range scan of the primary key
// (keys compare bytewise: the column's collation is "C").
func (s *Store) List(ctx context.Context, prefix string) ([]string, error) {
	if err := s.checkOpen(ctx); err != nil {
		return nil, err
	}
	if err := checkPrefix(prefix); err != nil {
		return nil, err
	}
	var keys []string
	err := s.read(ctx, func() (err error) {
		keys, err = s.list(ctx, s.pool, prefix)
		return err
	})
	if err != nil {
		return nil, s.fail(ctx, fmt.Sprintf("list %q", prefix), err)
	}
	s.up()
	return keys, nil
}

// querier is a pool or one connection.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func (s *Store) list(ctx context.Context, q querier, prefix string) ([]string, error) {
	var rows pgx.Rows
	var err error
	if prefix == "" {
		rows, err = q.Query(ctx, `SELECT key FROM toolsift_store ORDER BY key`)
	} else {
		rows, err = q.Query(ctx, `SELECT key FROM toolsift_store WHERE key >= $1 AND key < $2 ORDER BY key`, prefix, successor(prefix))
	}
	if err != nil {
		return nil, err
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	return keys, nil
}

// successor returns the least string greater than every string that
// starts with prefix: its last byte incremented (a valid prefix is ASCII,
// so no byte is 0xff).
func successor(prefix string) string {
	b := []byte(prefix)
	b[len(b)-1]++
	return string(b)
}

// lockPoll bounds the wait between two tries of a held lock.
const lockPoll = 20 * time.Millisecond

// Lock implements store.Store with a session-level advisory lock on a
// 64-bit hash of key, held by a connection of the pool until unlock. A
// waiter tries (pg_try_advisory_lock) and sleeps, never blocking in the
// server, so a canceled waiter holds nothing and the pool's connections
// are not all taken by waiters. The lock lives as long as its connection:
// if the server or the connection is lost, the server releases it (the
// holder's unlock then has nothing to release, and logs that). While the
// server is unreachable Lock waits, backing off as writes do, until ctx
// ends. The unlock's own query is bounded by 10 seconds (it has no ctx);
// a connection whose unlock failed is closed, which releases the lock.
func (s *Store) Lock(ctx context.Context, key string) (func(), error) {
	if err := s.check(ctx, key); err != nil {
		return nil, err
	}
	id := lockID(key)
	wait := time.Millisecond
	var lastErr error
	for {
		if err := s.checkOpen(ctx); err != nil {
			return nil, lockWaitErr(key, err, lastErr)
		}
		conn, got, err := s.tryLock(ctx, id)
		if err != nil && ctx.Err() != nil {
			return nil, lockWaitErr(key, ctx.Err(), lastErr)
		}
		if err != nil && !retryable(err) {
			return nil, fmt.Errorf("postgres: lock %s: %s", key, s.text(err))
		}
		if err != nil {
			lastErr = err
			s.lost("lock "+key, err)
			wait = max(wait, minBackoff)
		} else {
			lastErr = nil
			s.up()
		}
		if got {
			return s.unlocker(key, id, conn), nil
		}
		select {
		case <-ctx.Done():
			return nil, lockWaitErr(key, ctx.Err(), lastErr)
		case <-s.done:
			return nil, lockWaitErr(key, errClosed, lastErr)
		case <-time.After(jitter(wait)):
		}
		if lastErr != nil {
			wait = min(2*wait, maxBackoff) // the server is away: back off as writes do
		} else {
			wait = min(2*wait, lockPoll) // held by another: poll
		}
	}
}

func lockWaitErr(key string, err, last error) error {
	if last != nil {
		return fmt.Errorf("postgres: lock %s: %w (the server was unreachable: %w)", key, err, ErrUnavailable)
	}
	return fmt.Errorf("postgres: lock %s: %w", key, err)
}

// tryLock takes a connection and tries the lock on it; it keeps the
// connection only when it got the lock. A failed try closes its
// connection: whatever the server did, that session holds nothing after.
func (s *Store) tryLock(ctx context.Context, id int64) (*pgxpool.Conn, bool, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, false, err
	}
	var got bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, id).Scan(&got); err != nil {
		_ = conn.Conn().Close(context.Background())
		conn.Release()
		return nil, false, err
	}
	if !got {
		conn.Release()
		return nil, false, nil
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = conn.Conn().Close(context.Background())
		conn.Release()
		return nil, false, errClosed
	}
	s.held[conn] = struct{}{}
	s.mu.Unlock()
	return conn, true, nil
}

// unlocker returns the release of a lock held on conn.
func (s *Store) unlocker(key string, id int64, conn *pgxpool.Conn) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			_, mine := s.held[conn]
			delete(s.held, conn)
			s.mu.Unlock()
			if !mine {
				return // Close released it
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var ok bool
			if err := conn.QueryRow(ctx, `SELECT pg_advisory_unlock($1)`, id).Scan(&ok); err != nil || !ok {
				// The session is gone (and its lock with it) or in an
				// unknown state: drop the connection rather than pool it.
				if err != nil {
					s.log.Warn("postgres: lock released with its lost connection", "store", s.where, "lock", key, "err", s.text(err))
				}
				_ = conn.Conn().Close(ctx)
			}
			conn.Release()
		})
	}
}

// lockID is the advisory lock key of a Lock key: FNV-1a 64 of a prefix
// naming this table and the key, so that other users of advisory locks in
// the same database are unlikely to collide.
func lockID(key string) int64 {
	h := fnv.New64a()
	h.Write([]byte("toolsift_store\x00"))
	h.Write([]byte(key))
	return int64(h.Sum64())
}

// Close implements store.Store: it ends running Watch calls, releases
// held locks (their connections are closed) and closes the pool.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	held := s.held
	s.held = map[*pgxpool.Conn]struct{}{}
	s.mu.Unlock()
	for conn := range held {
		_ = conn.Conn().Close(context.Background())
		conn.Release()
	}
	s.watching.Wait()
	s.sweeping.Wait()
	s.pool.Close()
	return nil
}

var errClosed = errors.New("postgres: store closed")

func (s *Store) checkOpen(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return errClosed
	}
	return nil
}

func (s *Store) check(ctx context.Context, key string) error {
	if err := s.checkOpen(ctx); err != nil {
		return err
	}
	return store.CheckKey(key)
}

// checkPrefix accepts "" and any prefix of a valid key (a trailing "/"
// included), as the store package does.
func checkPrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	p := strings.TrimSuffix(prefix, "/")
	if p == "" {
		return fmt.Errorf("%w prefix %q", store.ErrKey, prefix)
	}
	if err := store.CheckKey(p); err != nil {
		return fmt.Errorf("%w prefix %q", store.ErrKey, prefix)
	}
	return nil
}

// Backoff of retried writes: from minBackoff, doubling, to maxBackoff.
const (
	minBackoff = 50 * time.Millisecond
	maxBackoff = 2 * time.Second
)

func jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d/2+1)
}

// retry runs op until it succeeds, fails with an error that a new try
// cannot fix, or ctx ends. Writes are idempotent (an upsert, a delete),
// so a try whose commit happened but whose answer was lost is safely
// made again.
func (s *Store) retry(ctx context.Context, what string, op func() error) error {
	wait := minBackoff
	unreachable := false
	for {
		err := op()
		if err == nil {
			s.up()
			return nil
		}
		if cerr := ctx.Err(); cerr != nil {
			if unreachable {
				return fmt.Errorf("postgres: %s: %w while the server was unreachable (%w; last error: %s)", what, cerr, ErrUnavailable, s.text(err))
			}
			return fmt.Errorf("postgres: %s: %w (last error: %s)", what, cerr, s.text(err))
		}
		if !retryable(err) {
			return fmt.Errorf("postgres: %s: %s", what, s.text(err))
		}
		unreachable = true
		s.lost(what, err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("postgres: %s: %w while the server was unreachable (%w; last error: %s)", what, ctx.Err(), ErrUnavailable, s.text(err))
		case <-s.done:
			return fmt.Errorf("postgres: %s: %w while the server was unreachable (%w; last error: %s)", what, errClosed, ErrUnavailable, s.text(err))
		case <-time.After(jitter(wait)):
		}
		wait = min(2*wait, maxBackoff)
	}
}

// read runs op, and once more at once if it met a lost connection: a
// pooled connection that the server closed (a restart, an idle timeout)
// fails once, a server that is down fails both.
func (s *Store) read(ctx context.Context, op func() error) error {
	err := op()
	if err != nil && retryable(err) && ctx.Err() == nil {
		err = op()
	}
	return err
}

// fail is the error of a read that failed.
func (s *Store) fail(ctx context.Context, what string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("postgres: %s: %w", what, cerr)
	}
	if retryable(err) {
		s.lost(what, err)
		return fmt.Errorf("postgres: %s: %w: %s", what, ErrUnavailable, s.text(err))
	}
	return fmt.Errorf("postgres: %s: %s", what, s.text(err))
}

// lost logs, once until the next success, that the server was lost.
func (s *Store) lost(what string, err error) {
	if s.down.CompareAndSwap(false, true) {
		s.log.Warn("postgres: server unreachable; writes are retried until it is back", "store", s.where, "op", what, "err", s.text(err))
	}
}

// up logs, once, that the server is back.
func (s *Store) up() {
	if s.down.Load() && s.down.CompareAndSwap(true, false) {
		s.log.Info("postgres: server reachable again", "store", s.where)
	}
}

// retryable reports whether err is the server or the connection going
// away (or a transient conflict), which a new try on a new connection may
// not meet: anything but an error the server reported about the
// statement.
func retryable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errClosed) {
		return false
	}
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		return true // no connection now (refused, starting up, shutting down, not accepting connections)
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return true // the network, a closed connection, a failed dial
	}
	switch {
	case strings.HasPrefix(pgErr.Code, "08"), // connection exception
		strings.HasPrefix(pgErr.Code, "57P"),         // admin or crash shutdown, cannot connect now
		pgErr.Code == "53300",                        // too many connections
		pgErr.Code == "40001", pgErr.Code == "40P01": // serialization failure, deadlock
		return true
	}
	return false
}

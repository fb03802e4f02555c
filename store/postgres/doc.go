// Package postgres is toolsift's shared store: a store.Store,
// store.Watcher, store.BoundedGetter, store.PrefixDeleter and store.RateLimiter in a PostgreSQL database (pgx), for a team gateway that
// runs several `toolsift serve --store postgres://…` replicas over the
// same data. The embedded default stays store.Dir: a newcomer needs no
// database.
//
//	s, err := postgres.Open(ctx, "postgres://toolsift:secret@db:5432/toolsift", nil)
//	if err != nil {
//		return err // names the URL without its password
//	}
//	defer s.Close()
//
// # Schema
//
// Open creates what it needs if missing, in one transaction under an
// advisory lock (replicas starting at once migrate once):
//
//	toolsift_store        (key text COLLATE "C" PRIMARY KEY, value bytea NOT NULL,
//	                       rev bigint NOT NULL, updated_at timestamptz NOT NULL)
//	toolsift_store_rev    a sequence: every write's rev
//	toolsift_rate_limit   (key bytea PRIMARY KEY, tat timestamptz NOT NULL,
//	                       took boolean NOT NULL): TakeToken's buckets
//	toolsift_store_schema (version integer): 2
//
// A database whose schema is newer than this package's is refused; one of
// version 1 gains toolsift_rate_limit. The
// role in the URL needs CREATE on the database's public schema at the
// first start (the database's owner has it), and after that only SELECT,
// INSERT, UPDATE, DELETE on the three tables and USAGE on the sequence.
//
// # Operations
//
// Put is one upsert that also sends a notification (pg_notify in the same
// statement, so delivered at commit); Get and GetBounded select the
// value's length and, only when it is within the limit, the value (a
// larger one is refused without being sent: store.BoundedGetter); List is a range scan of the primary
// key (key >= prefix AND key < its successor), sorted bytewise;
// DeletePrefix is one DELETE of that range, with a notification of each
// deleted key in the same statement (as Delete's), so it is atomic and
// watchers hear of every key; Lock is a
// session-level advisory lock on a 64-bit hash of the key, held by a
// pooled connection until unlock (tried with pg_try_advisory_lock and
// waited for in this process, so a canceled waiter holds nothing); Watch
// is LISTEN on channel toolsift_store, each payload naming the writer's
// instance id, the write's rev and the key, and calls its ready once the
// first LISTEN is in effect; TakeToken is one upsert of the bucket's row
// (GCRA, timed by the server's clock_timestamp()), its key the SHA-256 of
// the bucket's name, and at most once a minute a DELETE of the rows of
// full buckets, in the background.
//
// # Faults
//
// An unreachable server at Open is an error wrapping ErrUnavailable; a
// server that answers but refuses (a wrong password, a role or database
// that does not exist, no pg_hba.conf line, no CONNECT privilege, no
// right to create or use the tables) one wrapping ErrRefused, which says
// what to run or change. Both name the URL without its password. When the server is lost later, Put,
// Delete and DeletePrefix retry with backoff (50ms doubling to 2s, jittered) until they
// commit or their ctx ends: a nil error means committed, so nothing
// acknowledged is lost (an error whose ctx ended while the server was away
// wraps both ctx's error and ErrUnavailable). Get and List try twice and then fail with
// ErrUnavailable (callers serve from memory); Lock waits, backing off as
// writes do. Watch reconnects and reports what changed meanwhile (see
// Store.Watch). The loss is logged once as a warning through
// Options.Logger and the recovery once as info (a Watch logs its own). A held lock lives as long
// as its connection: if the server or the connection is lost, the server
// releases it.
//
// The pool has 16 connections unless the URL sets pool_max_conns; each
// held lock keeps one, and each running Watch has a connection of its
// own besides.
package postgres

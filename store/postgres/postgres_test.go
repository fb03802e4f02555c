package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolsift/toolsift/internal/pgtest"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/store/postgres"
	"github.com/toolsift/toolsift/store/storetest"
)

func TestMain(m *testing.M) {
	code := pgtest.Main(m)
	if code == 0 {
		if leaked := testenv.Leaked(10 * time.Second); leaked != "" {
			fmt.Fprintf(os.Stderr, "goroutines leaked by the tests:\n%s\n", leaked)
			code = 1
		}
	}
	os.Exit(code)
}

func open(t testing.TB, url string, log *slog.Logger) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), url, &postgres.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// two returns two Stores over one new database: two replicas.
func two(t *testing.T) (store.Store, store.Store) {
	url := pgtest.Start(t)
	return open(t, url, nil), open(t, url, nil)
}

func TestStore(t *testing.T) {
	storetest.RunShared(t, two)
}

func TestWatcher(t *testing.T) {
	storetest.RunWatcher(t, two)
}

// TestOpenUnreachable: a server that is not there is an error that names
// the URL (user, host, database), without its password.
func TestOpenUnreachable(t *testing.T) {
	dir := t.TempDir() // no socket there
	for _, c := range []struct{ url, password, named string }{
		{"postgres://toolsift:hunter2-secret-pw@/toolsift?host=" + dir, "hunter2-secret-pw", "postgres://toolsift:REDACTED@/toolsift?host=" + dir},
		{"postgres://toolsift:hunter2-secret-pw@127.0.0.1:1/toolsift?connect_timeout=5", "hunter2-secret-pw", "postgres://toolsift:REDACTED@127.0.0.1:1/toolsift?connect_timeout=5"},
		{"postgresql://toolsift@127.0.0.1:1/db1?password=s3cr%40t-pw&connect_timeout=5", "s3cr@t-pw", "postgresql://toolsift@127.0.0.1:1/db1?connect_timeout=5&password=REDACTED"},
		{"postgres://u:p%40ss-w0rd-x@127.0.0.1:1/db2", "p@ss-w0rd-x", "postgres://u:REDACTED@127.0.0.1:1/db2"},
	} {
		_, err := postgres.Open(context.Background(), c.url, nil)
		if !errors.Is(err, postgres.ErrUnavailable) || errors.Is(err, postgres.ErrRefused) {
			t.Fatalf("Open %s: %v, want ErrUnavailable, not ErrRefused", c.url, err)
		}
		msg := err.Error()
		for _, pw := range []string{c.password, url.PathEscape(c.password), url.QueryEscape(c.password)} {
			if strings.Contains(msg, pw) {
				t.Errorf("the error shows the password %q: %s", pw, msg)
			}
		}
		if !strings.Contains(msg, c.named) {
			t.Errorf("the error does not name %s: %s", c.named, msg)
		}
	}
}

// TestOpenRefuses: what is not a PostgreSQL URL is refused before any
// connection, without echoing a password.
func TestOpenRefuses(t *testing.T) {
	for _, url := range []string{
		"mysql://u:pw-secret-123@db/x",
		"/var/lib/toolsift",
		"postgres://u:pw-secret-123@db:notaport/x",
		"postgres://u:pw-secret-123@db/x?pool_max_conns=many",
	} {
		_, err := postgres.Open(context.Background(), url, nil)
		if !errors.Is(err, postgres.ErrOptions) {
			t.Errorf("Open %q: %v, want ErrOptions", url, err)
			continue
		}
		if strings.Contains(err.Error(), "pw-secret-123") {
			t.Errorf("the error shows the password: %v", err)
		}
	}
}

// TestMigrateOnce: replicas that start at once on a new database all
// open it, and the schema is made once.
func TestMigrateOnce(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Start(t)
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for range 6 {
		wg.Go(func() {
			s, err := postgres.Open(ctx, url, nil)
			if err == nil {
				err = s.Put(ctx, "k", []byte("v"))
				s.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	conn := connect(t, url)
	var rows, version int
	if err := conn.QueryRow(ctx, `SELECT count(*), max(version) FROM toolsift_store_schema`).Scan(&rows, &version); err != nil {
		t.Fatal(err)
	}
	if rows != 1 || version != 2 {
		t.Fatalf("toolsift_store_schema has %d rows, version %d; want one row, version 2", rows, version)
	}

	// A schema from a newer toolsift is refused, naming both versions.
	if _, err := conn.Exec(ctx, `UPDATE toolsift_store_schema SET version = 3`); err != nil {
		t.Fatal(err)
	}
	_, err := postgres.Open(ctx, url, nil)
	if err == nil || !strings.Contains(err.Error(), "version 3, newer than this toolsift's 2") {
		t.Fatalf("Open of a newer schema: %v, want an error naming versions 3 and 2", err)
	}
}

func connect(t testing.TB, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// TestListIsARange: List's prefix is matched as bytes ("_" is not a
// pattern, case counts) and its order is Go's, on a database whose own
// collation (ICU en-US) sorts otherwise; the query is a range scan of the
// primary key.
func TestListIsARange(t *testing.T) {
	ctx := context.Background()
	adm := connect(t, adminURL(t, pgtest.Start(t)))
	db := dbOf(t, pgtest.Start(t)) + "_icu"
	exec(t, adm, `CREATE DATABASE `+pgx.Identifier{db}.Sanitize()+` TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C'`)
	url := strings.Replace(adminURL(t, pgtest.Start(t)), "/postgres?", "/"+db+"?", 1)
	s := open(t, url, nil)
	keys := []string{"a_b/1", "axb/2", "a_b", "a-b/4", "A_b/5", "a_bc", "a_B", "a:b", "a.b", "Z", "0"}
	for _, k := range keys {
		if err := s.Put(ctx, k, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ prefix, want string }{
		{"a_b", "a_b a_b/1 a_bc"},
		{"", "0 A_b/5 Z a-b/4 a.b a:b a_B a_b a_b/1 a_bc axb/2"},
	} {
		got, err := s.List(ctx, c.prefix)
		if err != nil || strings.Join(got, " ") != c.want {
			t.Errorf("List %q = %q, %v; want %s", c.prefix, got, err, c.want)
		}
	}
	conn := connect(t, url)
	exec(t, conn, `SET enable_seqscan = off`)
	rows, _ := conn.Query(ctx, `EXPLAIN SELECT key FROM toolsift_store WHERE key >= $1 AND key < $2 ORDER BY key`, "a_b", "a_c")
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if plan := strings.Join(lines, "\n"); !strings.Contains(plan, "toolsift_store_pkey") || !strings.Contains(plan, "Index Cond: ((key >= 'a_b'::text) AND (key < 'a_c'::text))") {
		t.Fatalf("List's query is not a range scan of the primary key's index:\n%s", plan)
	}
}

// TestValueLimit: a value over store.MaxValueBytes is refused before it
// is sent.
func TestValueLimit(t *testing.T) {
	s := open(t, pgtest.Start(t), nil)
	err := s.Put(context.Background(), "big", make([]byte, store.MaxValueBytes+1))
	if err == nil || !strings.Contains(err.Error(), "over store.MaxValueBytes") {
		t.Fatalf("Put of MaxValueBytes+1: %v, want refused", err)
	}
}

// advisoryLocks counts the advisory locks held in the database of url.
func advisoryLocks(t *testing.T, conn *pgx.Conn) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(context.Background(),
		`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestLockWaiterCanceled: a waiter whose ctx ends holds nothing, then or
// later; a closed Store's locks are released.
func TestLockWaiterCanceled(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Start(t)
	a, b := open(t, url, nil), open(t, url, nil)
	conn := connect(t, url)
	unlock, err := a.Lock(ctx, "locks/x")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			c, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			defer cancel()
			if _, err := b.Lock(c, "locks/x"); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Lock of a held lock, ctx ending: %v, want DeadlineExceeded", err)
			}
		})
	}
	wg.Wait()
	unlock()
	unlock() // a second call does nothing
	// A waiter whose try failed closed its session; the server may take
	// a moment to end it.
	waitFor(t, func() bool { return advisoryLocks(t, conn) == 0 })
	unlock2, err := b.Lock(ctx, "locks/x")
	if err != nil {
		t.Fatal(err)
	}
	if n := advisoryLocks(t, conn); n != 1 {
		t.Fatalf("%d advisory locks held, want 1", n)
	}
	b.Close()
	unlock2() // after Close: nothing to do
	// The server ends the closed session's backend, and its lock, soon
	// after the client's Terminate message.
	waitFor(t, func() bool { return advisoryLocks(t, conn) == 0 })
	if _, err := a.Lock(ctx, "locks/x"); err != nil {
		t.Fatal(err)
	}
}

// TestWatchCatchesUp: writes made while a watch's connection was down
// are reported once it is back, and the loss and the recovery are logged
// once each. Connections to the database are refused meanwhile
// (ALLOW_CONNECTIONS false) while the writer keeps its pooled session.
func TestWatchCatchesUp(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Start(t)
	var log testenv.Buffer
	a := open(t, url, slog.New(slog.NewTextHandler(&log, nil)))
	b := open(t, url, nil)
	for _, k := range []string{"trust/pre.json", "trust/same.json"} {
		if err := b.Put(ctx, k, []byte("v1")); err != nil {
			t.Fatal(err)
		}
	}
	keys, stop := watch(t, a, "trust/")
	defer stop()
	probe(t, b, keys, "trust/")

	adm := connect(t, adminURL(t, url))
	db := dbOf(t, url)
	exec(t, adm, `ALTER DATABASE `+pgx.Identifier{db}.Sanitize()+` ALLOW_CONNECTIONS false`)
	var killed int
	if err := adm.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = $1 AND application_name = 'toolsift watch'`, db).Scan(&killed); err != nil || killed != 1 {
		t.Fatalf("terminated %d watch connections, %v; want 1", killed, err)
	}
	log.WaitFor(t, "watch lost its connection")

	// b writes on its pooled session; nobody is listening.
	if err := b.Put(ctx, "trust/during.json", []byte("new")); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, "trust/pre.json"); err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, "catalog/outside.json", []byte("x")); err != nil {
		t.Fatal(err)
	}
	// The watcher's own Store writes too, on its pooled session: not
	// reported, though its rev changed.
	if err := a.Put(ctx, "trust/mine.json", []byte("mine")); err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, "trust/same.json", []byte("v2")); err != nil {
		t.Fatal(err)
	}
	if err := a.Put(ctx, "trust/same.json", []byte("v3")); err != nil {
		t.Fatal(err)
	}
	exec(t, adm, `ALTER DATABASE `+pgx.Identifier{db}.Sanitize()+` ALLOW_CONNECTIONS true`)

	got := []string{next(t, keys), next(t, keys)}
	if want := "trust/during.json trust/pre.json"; strings.Join(got, " ") != want {
		t.Fatalf("after the reconnect Watch reported %q, want %s (the put and the delete it missed; not the unchanged keys, nor those whose last write was the watcher's own)", got, want)
	}
	// And it is listening again.
	if err := b.Put(ctx, "trust/after.json", nil); err != nil {
		t.Fatal(err)
	}
	if k := next(t, keys); k != "trust/after.json" {
		t.Fatalf("Watch reported %q, want trust/after.json", k)
	}
	logged := log.String()
	if strings.Count(logged, "watch lost its connection") != 1 || strings.Count(logged, "watch listening again") != 1 {
		t.Fatalf("the watch's loss and recovery are not logged once each:\n%s", logged)
	}
}

// TestServerLost stops the server mid-run: reads fail at once with
// ErrUnavailable, a Put waits and commits once the server is back (what
// it acknowledged is there for a new Store), the watch resumes and
// reports it, and the loss and the recovery are logged once each.
func TestServerLost(t *testing.T) {
	ctx := context.Background()
	cluster := pgtest.NewCluster(t)
	// The cluster trusts its socket, so a password in the URL is never
	// sent; it must not reach the log either.
	const password = "hunter2-log-pw"
	url := strings.Replace(cluster.Database(t), "postgres://postgres@", "postgres://postgres:"+password+"@", 1)
	var log, watchLog testenv.Buffer
	a := open(t, url, slog.New(slog.NewTextHandler(&watchLog, nil)))
	b := open(t, url, slog.New(slog.NewTextHandler(&log, nil)))
	if err := b.Put(ctx, "trust/before.json", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	keys, stop := watch(t, a, "trust/")
	defer stop()
	probe(t, b, keys, "trust/")

	held, err := b.Lock(ctx, "locks/held")
	if err != nil {
		t.Fatal(err)
	}

	cluster.Stop(t)
	if _, err := b.Get(ctx, "trust/before.json"); !errors.Is(err, postgres.ErrUnavailable) {
		t.Fatalf("Get while the server is down: %v, want ErrUnavailable", err)
	}
	if _, err := b.List(ctx, "trust/"); !errors.Is(err, postgres.ErrUnavailable) {
		t.Fatalf("List while the server is down: %v, want ErrUnavailable", err)
	}
	put := make(chan error, 1)
	go func() { put <- b.Put(ctx, "trust/while-down.json", []byte("kept")) }()
	select {
	case err := <-put:
		t.Fatalf("Put returned %v while the server was down; want it to wait", err)
	case <-time.After(300 * time.Millisecond):
	}
	// A write whose ctx ends while the server is down says so; so does a
	// Lock.
	c, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err = b.Delete(c, "trust/before.json")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, postgres.ErrUnavailable) {
		t.Fatalf("Delete whose ctx ended while the server was down: %v, want DeadlineExceeded and ErrUnavailable", err)
	}
	c, cancel = context.WithTimeout(ctx, 200*time.Millisecond)
	_, err = b.Lock(c, "locks/other")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, postgres.ErrUnavailable) {
		t.Fatalf("Lock whose ctx ended while the server was down: %v, want DeadlineExceeded and ErrUnavailable", err)
	}

	cluster.Restart(t)
	select {
	case err := <-put:
		if err != nil {
			t.Fatalf("Put after the server came back: %v", err)
		}
	case <-time.After(testenv.WaitLimit()):
		t.Fatal("Put did not commit after the server's restart")
	}
	fresh := open(t, url, nil)
	if v, err := fresh.Get(ctx, "trust/while-down.json"); err != nil || string(v) != "kept" {
		t.Fatalf("a new Store reads %q, %v; want the value Put acknowledged", v, err)
	}
	if k := next(t, keys); k != "trust/while-down.json" {
		t.Fatalf("Watch reported %q after the restart, want trust/while-down.json", k)
	}
	// The lock held across the restart went with its session: another
	// Store takes it, and the old holder's unlock says what happened.
	c, cancel = context.WithTimeout(ctx, testenv.WaitLimit())
	unlock, err := fresh.Lock(c, "locks/held")
	cancel()
	if err != nil {
		t.Fatalf("Lock after the restart: %v", err)
	}
	unlock()
	held()
	if !strings.Contains(log.String(), "lock released with its lost connection") {
		t.Fatalf("the unlock of a lock lost with the server logged nothing:\n%s", log.String())
	}
	logged := log.String()
	if strings.Count(logged, "server unreachable") != 1 || strings.Count(logged, "server reachable again") != 1 {
		t.Fatalf("the loss and the recovery are not logged once each:\n%s", logged)
	}
	if strings.Contains(logged, password) || !strings.Contains(logged, "postgres://postgres:REDACTED@/") {
		t.Fatalf("the log does not name the store by its URL without the password:\n%s", logged)
	}
	if w := watchLog.String(); strings.Count(w, "watch lost its connection") != 1 || strings.Count(w, "watch listening again") != 1 || strings.Contains(w, password) {
		t.Fatalf("the watch's loss and recovery are not logged once each, without the password:\n%s", w)
	}
}

// TestConnectionsTerminated: every session of the database ended by the
// server (pg_terminate_backend) while the server stays up: the next
// operations reconnect without an error reaching the caller.
func TestConnectionsTerminated(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Start(t)
	s := open(t, url, nil)
	if err := s.Put(ctx, "k", []byte("1")); err != nil {
		t.Fatal(err)
	}
	adm := connect(t, adminURL(t, url))
	exec(t, adm, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '`+dbOf(t, url)+`' AND application_name = 'toolsift'`)
	if err := s.Put(ctx, "k", []byte("2")); err != nil {
		t.Fatalf("Put after the sessions were terminated: %v", err)
	}
	exec(t, adm, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '`+dbOf(t, url)+`' AND application_name = 'toolsift'`)
	if v, err := s.Get(ctx, "k"); err != nil || string(v) != "2" {
		t.Fatalf("Get after the sessions were terminated: %q, %v", v, err)
	}
}

func exec(t *testing.T, conn *pgx.Conn, sql string) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// dbOf and adminURL: the database of url, and url on database postgres.
func dbOf(t *testing.T, u string) string {
	cfg, err := pgx.ParseConfig(u)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Database
}

func adminURL(t *testing.T, u string) string {
	db := dbOf(t, u)
	i := strings.Index(u, "/"+db)
	if i < 0 {
		t.Fatalf("%s does not name database %s in its path", u, db)
	}
	return u[:i] + "/postgres" + u[i+1+len(db):]
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testenv.WaitLimit())
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("the condition did not come true")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// watch runs a.Watch on prefix; the keys arrive on the channel.
func watch(t *testing.T, w store.Watcher, prefix string) (<-chan string, func()) {
	keys := make(chan string, 256)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Watch(ctx, prefix, nil, func(k string) { keys <- k }) }()
	return keys, func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Watch: %v, want Canceled", err)
		}
	}
}

// probe waits until the watch is listening: b writes prefix+"probe-N"
// until one is reported, then prefix+"probe-done", and the reports up to
// it are read.
func probe(t *testing.T, b store.Store, keys <-chan string, prefix string) {
	t.Helper()
	ctx := context.Background()
	for i := 0; ; i++ {
		if i > 1000 {
			t.Fatal("Watch reported no write")
		}
		if err := b.Put(ctx, fmt.Sprintf("%sprobe-%d", prefix, i), nil); err != nil {
			t.Fatal(err)
		}
		select {
		case <-keys:
			if err := b.Put(ctx, prefix+"probe-done", nil); err != nil {
				t.Fatal(err)
			}
			for next(t, keys) != prefix+"probe-done" {
			}
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func next(t *testing.T, keys <-chan string) string {
	t.Helper()
	select {
	case k := <-keys:
		return k
	case <-time.After(testenv.WaitLimit()):
		t.Fatal("Watch reported nothing")
		return ""
	}
}

// TestGetBoundedSendsNoLargeValue: GetBounded refuses a value over its
// limit without the server sending it: the bytes that reach the client
// through a counting proxy are a fraction of the value's.
func TestGetBoundedSendsNoLargeValue(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Start(t)
	big := bytes.Repeat([]byte("v"), 8<<20)
	if err := open(t, url, nil).Put(ctx, "catalog/big.json", big); err != nil {
		t.Fatal(err)
	}
	proxied, sent := countingProxy(t, url)
	s := open(t, proxied, nil)
	if _, err := s.Get(ctx, "catalog/none.json"); !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err) // the pool's first connection, before counting
	}
	before := sent.Load()
	_, err := store.GetBounded(ctx, s, "catalog/big.json", 1<<10)
	if !errors.Is(err, store.ErrTooLarge) || !strings.Contains(err.Error(), "catalog/big.json") || !strings.Contains(err.Error(), fmt.Sprintf("%d bytes, over the limit of %d", len(big), 1<<10)) {
		t.Fatalf("GetBounded of %d bytes at a limit of 1 KiB: %v, want ErrTooLarge naming the key and both sizes", len(big), err)
	}
	n := sent.Load() - before
	if n > 64<<10 {
		t.Fatalf("GetBounded of a value over its limit made the server send %d bytes (the value has %d)", n, len(big))
	}
	t.Logf("GetBounded of %d bytes at a limit of 1 KiB: the server sent %d bytes", len(big), n)
	if v, err := store.GetBounded(ctx, s, "catalog/big.json", len(big)); err != nil || !bytes.Equal(v, big) {
		t.Fatalf("GetBounded at the value's size: %d bytes, %v", len(v), err)
	}
	if _, err := s.GetBounded(ctx, "catalog/big.json", 0); err == nil || !strings.Contains(err.Error(), "catalog/big.json") {
		t.Fatalf("GetBounded with a limit of 0: %v, want an error naming the key", err)
	}
}

// countingProxy serves a unix socket that forwards to the server of url
// and counts the bytes the server sends; it returns url through it.
func countingProxy(t *testing.T, u string) (string, *atomic.Int64) {
	t.Helper()
	cfg, err := pgx.ParseConfig(u)
	if err != nil {
		t.Fatal(err)
	}
	network, addr := "tcp", net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port))
	if strings.HasPrefix(cfg.Host, "/") {
		network, addr = "unix", fmt.Sprintf("%s/.s.PGSQL.%d", cfg.Host, cfg.Port)
	}
	dir, err := os.MkdirTemp("", "pgproxy")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ln, err := net.Listen("unix", dir+"/.s.PGSQL.5432")
	if err != nil {
		t.Fatal(err)
	}
	var sent atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial(network, addr)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, up)
			mu.Unlock()
			wg.Go(func() { io.Copy(up, c); up.Close() })
			wg.Go(func() { io.Copy(countWriter{c, &sent}, up); c.Close() })
		}
	})
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	q := pu.Query()
	q.Set("host", dir)
	q.Set("port", "5432")
	pu.Host, pu.RawQuery = "", q.Encode()
	return pu.String(), &sent
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// TestOwnWritesBounded: a Store keeps its own writes (for a watch's
// catch-up after a reconnect) only under the prefixes it watches, and
// forgets them when the last watch of a prefix ends: a gateway that writes
// an audit record per call, under a prefix no one watches, keeps nothing
// per record.
func TestOwnWritesBounded(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Start(t)
	a, b := open(t, url, nil), open(t, url, nil)
	put := func(key string) {
		t.Helper()
		if err := a.Put(ctx, key, []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 300 {
		put(fmt.Sprintf("audit/2026-11-26/%04d.json", i))
	}
	if n := postgres.OwnWrites(a); n != 0 {
		t.Fatalf("unwatched, the Store keeps %d own writes, want 0", n)
	}
	keys, stop := watch(t, a, "trust/")
	probe(t, b, keys, "trust/")
	put("trust/x.json")
	put("audit/2026-11-26/late.json")
	if err := a.Delete(ctx, "trust/gone.json"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.DeletePrefix(ctx, "audit/"); err != nil {
		t.Fatal(err)
	}
	if n := postgres.OwnWrites(a); n != 2 {
		t.Fatalf("watching trust/, the Store keeps %d own writes, want 2 (trust/x.json, trust/gone.json)", n)
	}
	stop()
	if n := postgres.OwnWrites(a); n != 0 {
		t.Fatalf("after its only watch ended, the Store keeps %d own writes, want 0", n)
	}
}

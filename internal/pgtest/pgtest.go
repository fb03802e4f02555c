//go:build unix

// Package pgtest gives tests a real PostgreSQL server: a throwaway
// cluster that the test binary starts (initdb and postgres from Debian's
// postgresql package, in a temporary folder, in memory under /dev/shm
// where Linux has room there, on a unix socket in it, with fsync off), and
// a fresh database in it for each test.
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
//	func TestX(t *testing.T) {
//		url := pgtest.Start(t) // postgres://postgres@/t_3_TestX?host=/tmp/…
//	}
//
// The cluster is started by the first Start and stopped by Main when the
// tests end (and killed with the test binary if it dies: Pdeathsig on
// Linux). PostgreSQL refuses to run as root: under euid 0 the cluster runs
// as the postgres user (else nobody), in a folder that user owns.
//
// With TOOLSIFT_TEST_POSTGRES set to a URL, Start creates its databases on
// that server instead (a role that may CREATE DATABASE) and drops them at
// the test's end. Without the binaries, a test that needs them fails,
// naming what to install: tests that need PostgreSQL never skip. Without
// Main, a started cluster still dies with the test binary (on Linux), and
// its folder is left in the temporary folder.
//
// NewCluster starts a cluster of the test's own, for tests that stop and
// restart the server.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Env names the variable that points the tests at an existing server.
const Env = "TOOLSIFT_TEST_POSTGRES"

// startWait bounds the wait for a cluster to accept connections.
const startWait = 2 * time.Minute

var (
	sharedOnce sync.Once
	shared     *Cluster
	sharedErr  error
	dbSeq      atomic.Int64
)

// Main runs the tests of m, then stops the cluster Start started, and
// returns the code for os.Exit.
func Main(m *testing.M) int {
	code := m.Run()
	if shared != nil {
		if err := shared.stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
		}
		shared.remove()
	}
	return code
}

// Start returns the URL of a new, empty database for t, on the test
// binary's cluster (started at the first call) or on the server
// TOOLSIFT_TEST_POSTGRES names. It fails t when neither is possible.
func Start(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	if ext := os.Getenv(Env); ext != "" {
		name := dbName(t)
		u, err := createDatabase(ctx, ext, name)
		if err != nil {
			t.Fatalf("pgtest: %s: %v", Env, err)
		}
		t.Cleanup(func() {
			conn, err := pgx.Connect(ctx, ext)
			if err != nil {
				t.Logf("pgtest: drop database %s: %v", name, err)
				return
			}
			defer conn.Close(ctx)
			if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
				t.Logf("pgtest: drop database %s: %v", name, err)
			}
		})
		return u
	}
	sharedOnce.Do(func() { shared, sharedErr = startCluster() })
	if sharedErr != nil {
		t.Fatalf("pgtest: %v", sharedErr)
	}
	u, err := createDatabase(ctx, shared.URL("postgres"), dbName(t))
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return u
}

// Cluster is a PostgreSQL server of one test: NewCluster starts it, Stop
// and Restart take it down and up on the same data and socket, and the
// test's cleanup stops it and removes its folder.
type Cluster struct {
	bin  string // folder of initdb and postgres
	dir  string // the socket's folder; the data is in dir/data
	cred *syscall.Credential

	mu   sync.Mutex
	proc *exec.Cmd
	done chan struct{} // closed when proc has exited
}

// NewCluster starts a cluster of t's own (a second of initdb, and its
// start), which t may stop and restart; its cleanup stops it. It needs
// the binaries even when TOOLSIFT_TEST_POSTGRES is set.
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	c, err := startCluster()
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		if err := c.stop(); err != nil {
			t.Errorf("pgtest: %v", err)
		}
		c.remove()
	})
	return c
}

// URL returns the URL of database db on c (over its unix socket, as the
// superuser postgres, no password).
func (c *Cluster) URL(db string) string {
	q := url.Values{"host": {c.dir}, "port": {"5432"}}
	return "postgres://postgres@/" + url.PathEscape(db) + "?" + q.Encode()
}

// Database creates a new, empty database on c and returns its URL.
func (c *Cluster) Database(t testing.TB) string {
	t.Helper()
	u, err := createDatabase(context.Background(), c.URL("postgres"), dbName(t))
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return u
}

// Stop shuts c down (a fast shutdown: open sessions are ended) and waits
// for it to exit.
func (c *Cluster) Stop(t testing.TB) {
	t.Helper()
	if err := c.stop(); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
}

// Restart starts c again after Stop, on the same data and socket.
func (c *Cluster) Restart(t testing.TB) {
	t.Helper()
	if err := c.start(); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
}

// libGlob is where Debian installs each major version's binaries.
var libGlob = "/usr/lib/postgresql/*/bin"

// binDir finds the folder holding initdb and postgres: PATH's initdb
// (its link resolved), else the newest /usr/lib/postgresql/N/bin.
func binDir() (string, error) {
	ok := func(dir string) bool {
		for _, b := range []string{"initdb", "postgres"} {
			if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.IsDir() {
				return false
			}
		}
		return true
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil && ok(filepath.Dir(real)) {
			return filepath.Dir(real), nil
		}
		if ok(filepath.Dir(p)) {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob(libGlob)
	version := func(d string) int {
		n, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		return n
	}
	slices.SortFunc(dirs, func(a, b string) int { return version(b) - version(a) })
	for _, d := range dirs {
		if ok(d) {
			return d, nil
		}
	}
	return "", errors.New("PostgreSQL's server binaries (initdb, postgres) are not on PATH or in /usr/lib/postgresql/*/bin: " +
		"install Debian's postgresql package (apt-get install postgresql), or run the tests with bash .ci/test, which installs it")
}

// runAs returns the credential the cluster runs under: none (this user)
// unless this process is root, which PostgreSQL refuses; then the
// postgres user, else nobody.
func runAs() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 == nil && err2 == nil {
			return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
		}
	}
	return nil, errors.New("running as root, and neither a postgres nor a nobody user exists to run PostgreSQL as (it refuses root)")
}

// startCluster runs initdb in a new temporary folder and starts the
// server.
func startCluster() (*Cluster, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	cred, err := runAs()
	if err != nil {
		return nil, err
	}
	// A unix socket's path is at most about 107 bytes: a short folder;
	// and one the cluster's user can reach (root's $TMPDIR may be under
	// /root, which the postgres user cannot enter).
	base := os.TempDir()
	if len(base) > 40 || cred != nil {
		base = "/tmp"
	}
	if mem := memDir(); mem != "" {
		base = mem
	}
	dir, err := os.MkdirTemp(base, "toolsift-pg-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{bin: bin, dir: dir, cred: cred}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			c.remove()
			return nil, err
		}
	}
	// --no-sync and fsync=off: a throwaway cluster need not survive a
	// power cut; trust auth on its own socket only (no TCP listener).
	initdb := c.command("initdb", "-D", filepath.Join(dir, "data"), "-U", "postgres", "--auth=trust",
		"--no-sync", "--encoding=UTF8", "--locale=C")
	if out, err := initdb.CombinedOutput(); err != nil {
		c.remove()
		return nil, fmt.Errorf("initdb (%s): %v\n%s", bin, err, out)
	}
	if err := c.start(); err != nil {
		c.remove()
		return nil, err
	}
	return c, nil
}

// command returns an exec.Cmd of one of the cluster's binaries, run as
// the cluster's user in its folder.
func (c *Cluster) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(c.bin, name), args...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C", "LANG=C")
	if c.cred != nil {
		cmd.Env = append(cmd.Env, "HOME="+c.dir)
	}
	cmd.SysProcAttr = sysProcAttr(c.cred)
	return cmd
}

// start starts the server and waits until it accepts connections.
func (c *Cluster) start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc != nil {
		return errors.New("cluster already running")
	}
	logPath := filepath.Join(c.dir, "postgres.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := c.command("postgres", "-D", filepath.Join(c.dir, "data"), "-k", c.dir, "-p", "5432",
		"-c", "listen_addresses=", "-c", "fsync=off", "-c", "synchronous_commit=off",
		"-c", "full_page_writes=off", "-c", "max_connections=200", "-c", "shared_buffers=16MB")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	done := make(chan struct{})
	started := make(chan error, 1)
	// Linux's Pdeathsig fires when the thread that started the child
	// exits, so the goroutine that starts it keeps its thread until the
	// server ends.
	go func() {
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			close(done)
			return
		}
		started <- nil
		_ = cmd.Wait()
		close(done)
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	c.proc, c.done = cmd, done

	ctx, cancel := context.WithTimeout(context.Background(), startWait)
	defer cancel()
	for {
		conn, err := pgx.Connect(ctx, c.URL("postgres"))
		if err == nil {
			conn.Close(ctx)
			return nil
		}
		select {
		case <-done:
			c.proc = nil
			log, _ := os.ReadFile(logPath)
			return fmt.Errorf("postgres exited at start: %v\n%s", err, tail(log))
		case <-ctx.Done():
			log, _ := os.ReadFile(logPath)
			return fmt.Errorf("postgres accepted no connection within %v: %v\n%s", startWait, err, tail(log))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stop asks the server for a fast shutdown and waits for it.
func (c *Cluster) stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc == nil {
		return nil
	}
	proc, done := c.proc, c.done
	c.proc = nil
	_ = proc.Process.Signal(syscall.SIGINT)
	select {
	case <-done:
		return nil
	case <-time.After(startWait):
		_ = proc.Process.Kill()
		<-done
		return errors.New("postgres did not shut down within " + startWait.String() + "; killed")
	}
}

func (c *Cluster) remove() { _ = os.RemoveAll(c.dir) }

func tail(b []byte) string {
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

var unsafeName = regexp.MustCompile(`[^a-z0-9_]+`)

// dbName makes a database name unique in this binary from the test's
// name: "t_<n>_<name>", at most 63 bytes.
func dbName(t testing.TB) string {
	n := unsafeName.ReplaceAllString(strings.ToLower(t.Name()), "_")
	name := fmt.Sprintf("t_%d_%d_%s", os.Getpid(), dbSeq.Add(1), n)
	if len(name) > 63 {
		name = name[:63]
	}
	return name
}

// createDatabase creates database name on the server of admin and
// returns admin with its database replaced.
func createDatabase(ctx context.Context, admin, name string) (string, error) {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	u, err := url.Parse(admin)
	if err != nil {
		return "", errors.New("the server's URL does not parse as a URL")
	}
	u.Path = "/" + name
	u.RawPath = ""
	return u.String(), nil
}

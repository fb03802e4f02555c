// Package testenv is what the tests of several toolsift packages share, so
// that each is written once: [Main] keeps a test binary away from the
// user's cache folder and fails it when goroutines of toolsift leak,
// [CheckGoroutines] checks one test for any goroutine it leaves, and
// [Index] builds the small index most tests search.
//
// It is imported by tests only (package x_test files).
package testenv

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolsift/toolsift/budget"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/toolindex"
)

// WaitLimit bounds a test's wait for work that should end (a server
// starting, an event arriving, goroutines ending after Close): a hang
// guard, never a timing assertion. It is the test binary's own -timeout
// (go test's default 10m, .ci/test's 30m) less a tenth of it, at most a
// minute, so that the test that hangs fails with its own message just
// before the binary's timeout would panic; a loaded machine slows the
// work, it does not fail the test. Under -timeout 0 (no limit) it is a
// day. Call it while tests run: it reads the parsed test flags.
func WaitLimit() time.Duration {
	var d time.Duration
	if f := flag.Lookup("test.timeout"); f != nil {
		if g, ok := f.Value.(flag.Getter); ok {
			d, _ = g.Get().(time.Duration)
		}
	}
	if d <= 0 {
		return 24 * time.Hour
	}
	return d - min(d/10, time.Minute)
}

// checkWait is [CheckGoroutines]' wait: [WaitLimit], shorter in this
// package's own tests.
var checkWait = WaitLimit

// Main runs the tests of m and returns the code for os.Exit. While they
// run, $XDG_CACHE_HOME is a folder of this run (removed afterwards), so
// that no test reads or writes the user's cache (the Hub's tool lists,
// the Toolset's vectors and token costs). When the tests pass, Main fails
// the run if goroutines running toolsift's or the MCP SDK's code are left
// (see [Leaked]), printing their stacks.
//
//	func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }
func Main(m *testing.M) int {
	cache, err := os.MkdirTemp("", "toolsift-test-cache")
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
	defer os.RemoveAll(cache)
	keepGoCache()
	os.Setenv("XDG_CACHE_HOME", cache)
	code := m.Run()
	if code == 0 {
		if leaked := Leaked(WaitLimit()); leaked != "" {
			fmt.Fprintf(os.Stderr, "goroutines leaked by the tests:\n%s\n", leaked)
			code = 1
		}
	}
	return code
}

// keepGoCache pins $GOCACHE to the go command's build cache before Main
// moves $XDG_CACHE_HOME: the go command's default cache folder is under it,
// so every `go build` a test runs (the README's program, a helper) would
// otherwise compile the standard library and every dependency afresh, for
// minutes on a loaded machine. Without a go command there is nothing to
// keep.
func keepGoCache() {
	if os.Getenv("GOCACHE") != "" {
		return
	}
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	if dir := strings.TrimSpace(string(out)); err == nil && dir != "" && dir != "off" {
		os.Setenv("GOCACHE", dir)
	}
}

// Leaked returns the stacks of goroutines, other than the caller's, that
// run code of toolsift (github.com/toolsift/toolsift/, or package main of
// a command under test) or of the MCP SDK,
// after waiting up to wait for them to end; "" when there are none. Call
// it when no test is running.
//
// One goroutine is allowed: package upstream starts child processes from a
// goroutine that locks its thread for the life of the process (Linux's
// Pdeathsig is per thread), by design.
func Leaked(wait time.Duration) string {
	deadline := time.Now().Add(wait)
	for {
		leaked := ours(stacks())
		if len(leaked) == 0 || time.Now().After(deadline) {
			return strings.Join(leaked, "\n\n")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// CheckGoroutines fails t if, once t's cleanups have run, more goroutines
// run than when it was called (any goroutine: a pipe copier of os/exec
// counts as much as one of toolsift's), after waiting up to [WaitLimit]
// for them to end. Call it first in a test that starts goroutines; tests
// that use it must not run in parallel.
func CheckGoroutines(t testing.TB) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(checkWait())
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				t.Errorf("goroutine leak: %d before the test, %d after\n%s", before, runtime.NumGoroutine(), strings.Join(stacks(), "\n\n"))
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// stacks returns the stacks of all goroutines but the caller's (which
// runtime.Stack lists first).
func stacks() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	all := strings.Split(string(buf), "\n\n")
	return all[1:]
}

// ours keeps the stacks that run code of toolsift or of the MCP SDK,
// except upstream's process starter and the test framework's own goroutines
// (a test's goroutine names the test's package while it runs).
func ours(stacks []string) []string {
	var out []string
	for _, g := range stacks {
		if strings.Contains(g, "upstream.startProcess") || strings.Contains(g, "testing.tRunner") {
			continue
		}
		// Frames of a command's own code (cmd/toolbench's tests) are
		// named main.*.
		if strings.Contains(g, "github.com/toolsift/toolsift/") || strings.Contains(g, "modelcontextprotocol/go-sdk") || strings.Contains(g, "\nmain.") {
			out = append(out, g)
		}
	}
	return out
}

// Index returns an index over tools: with emb, or with the local embedder
// ([toolindex.NewLocalEmbedder] with default options) when emb is nil,
// and with opts. It fails t on any error.
func Index(t testing.TB, emb toolindex.Embedder, opts *toolindex.Options, tools ...tool.Tool) *toolindex.Index {
	t.Helper()
	if emb == nil {
		local, err := toolindex.NewLocalEmbedder(nil)
		if err != nil {
			t.Fatal(err)
		}
		emb = local
	}
	ix, err := toolindex.New(emb, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) > 0 {
		if _, err := ix.Upsert(context.Background(), tools...); err != nil {
			t.Fatal(err)
		}
	}
	return ix
}

var (
	tokOnce sync.Once
	tok     *budget.Tokenizer
	tokErr  error
)

// Tokenizer is the default tokenizer (o200k_base), loaded once for the
// test binary: loading an encoding takes a while.
func Tokenizer(t testing.TB) *budget.Tokenizer {
	t.Helper()
	tokOnce.Do(func() { tok, tokErr = budget.NewTokenizer("", "") })
	if tokErr != nil {
		t.Fatal(tokErr)
	}
	return tok
}

// Buffer is a bytes.Buffer safe for concurrent use: the log of a server
// or Hub that goroutines write while the test reads it, or waits for a
// line in it ([Buffer.WaitFor]). The zero value is empty and ready.
type Buffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	written chan struct{} // closed by the next Write, for WaitFor
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.written != nil {
		close(b.written)
		b.written = nil
	}
	return b.b.Write(p)
}

// WaitFor returns once what was written contains s, waking at each write
// rather than polling; after [WaitLimit] it fails t, quoting what was
// written. Call it from the test's goroutine.
func (b *Buffer) WaitFor(t testing.TB, s string) {
	t.Helper()
	limit := time.NewTimer(WaitLimit())
	defer limit.Stop()
	for {
		b.mu.Lock()
		if strings.Contains(b.b.String(), s) {
			b.mu.Unlock()
			return
		}
		if b.written == nil {
			b.written = make(chan struct{})
		}
		written := b.written
		b.mu.Unlock()
		select {
		case <-written:
		case <-limit.C:
			t.Fatalf("waited %v for %q; written so far: %q", WaitLimit(), s, b.String())
		}
	}
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

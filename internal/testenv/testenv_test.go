package testenv

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/toolsift/toolsift/tool"
)

// recorder is a testing.TB that keeps its cleanups and errors, so that a
// check meant to fail a test can be seen failing.
type recorder struct {
	testing.TB
	cleanups []func()
	errs     []string
}

func (r *recorder) Helper()          {}
func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// parkedInToolsift blocks until release is closed; its frame names this
// package, so Leaked counts the goroutine running it.
func parkedInToolsift(release chan struct{}) { <-release }

func TestLeaked(t *testing.T) {
	if got := Leaked(time.Second); got != "" {
		t.Fatalf("goroutines left before the test:\n%s", got)
	}
	release := make(chan struct{})
	done := make(chan struct{})
	go func() { parkedInToolsift(release); close(done) }()
	got := Leaked(100 * time.Millisecond)
	if !strings.Contains(got, "testenv.parkedInToolsift") {
		t.Errorf("Leaked = %q, want the parked goroutine's stack", got)
	}
	close(release)
	<-done
	if got := Leaked(WaitLimit()); got != "" {
		t.Errorf("Leaked after the goroutine ended = %q, want none", got)
	}
}

// settle waits until the goroutine count has not changed for 50ms (at most
// WaitLimit): a goroutine of an earlier test that has closed its done
// channel is still counted until it has returned, and a baseline taken
// before it has would hide one leaked goroutine.
func settle(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(WaitLimit())
	n, since := runtime.NumGoroutine(), time.Now()
	for time.Since(since) < 50*time.Millisecond {
		if time.Now().After(deadline) {
			t.Fatalf("the goroutine count never settled (%d)", n)
		}
		time.Sleep(5 * time.Millisecond)
		if m := runtime.NumGoroutine(); m != n {
			n, since = m, time.Now()
		}
	}
}

func TestCheckGoroutines(t *testing.T) {
	checkWait = func() time.Duration { return 100 * time.Millisecond }
	defer func() { checkWait = WaitLimit }()

	settle(t)
	r := &recorder{TB: t}
	CheckGoroutines(r)
	release := make(chan struct{})
	go parkedInToolsift(release)
	for _, f := range r.cleanups {
		f()
	}
	close(release)
	settle(t)
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "goroutine leak") || !strings.Contains(r.errs[0], "parkedInToolsift") {
		t.Errorf("errors = %q, want one goroutine leak naming parkedInToolsift", r.errs)
	}

	r = &recorder{TB: t}
	CheckGoroutines(r)
	for _, f := range r.cleanups {
		f()
	}
	if len(r.errs) != 0 {
		t.Errorf("no goroutine started: errors = %q", r.errs)
	}
}

// TestMain runs this package's tests under Main, as every other package's.
func TestMain(m *testing.M) { os.Exit(Main(m)) }

// TestMainKeepsGoCache: Main moves $XDG_CACHE_HOME to a folder of the run,
// and the go command's build cache stays where it was, so that a test's
// `go build` reuses it instead of compiling everything afresh.
func TestMainKeepsGoCache(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("the go command is not on PATH: %v", err)
	}
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	gocache, xdg := strings.TrimSpace(string(out)), os.Getenv("XDG_CACHE_HOME")
	if rel, err := filepath.Rel(xdg, gocache); err == nil && !strings.HasPrefix(rel, "..") {
		t.Errorf("go env GOCACHE = %s, inside the run's cache folder %s", gocache, xdg)
	}
}

// TestWaitLimit: the wait scales with the test binary's -timeout.
func TestWaitLimit(t *testing.T) {
	f := flag.Lookup("test.timeout")
	old := f.Value.String()
	defer f.Value.Set(old)
	for _, tt := range []struct {
		timeout string
		want    time.Duration
	}{
		{"30m", 29 * time.Minute},
		{"10m", 9 * time.Minute},
		{"20s", 18 * time.Second},
		{"0", 24 * time.Hour},
	} {
		if err := f.Value.Set(tt.timeout); err != nil {
			t.Fatal(err)
		}
		if got := WaitLimit(); got != tt.want {
			t.Errorf("-timeout %s: WaitLimit() = %v, want %v", tt.timeout, got, tt.want)
		}
	}
}

func TestIndex(t *testing.T) {
	ix := Index(t, nil, nil, tool.Tool{Name: "fs__read_file", Description: "Read a file."}, tool.Tool{Name: "fs__write_file", Description: "Write a file."})
	if ix.Len() != 2 {
		t.Errorf("Len = %d, want 2", ix.Len())
	}
	if hits := ix.SearchLexical("write", 1, nil); len(hits) != 1 || hits[0].Tool.Name != "fs__write_file" {
		t.Errorf("SearchLexical(write) = %+v, want fs__write_file", hits)
	}
}

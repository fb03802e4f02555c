package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/upstream"
)

// terminal is a fake terminal for stderr: a buffer safe to read while a
// command writes to it.
type terminal = testenv.Buffer

// startToolbench runs toolbench in-process in the background with stderr
// on term, marked as a terminal or not; wait returns its exit code and
// stdout.
func startToolbench(t *testing.T, term *terminal, isTerminal bool, args ...string) (wait func() (int, string)) {
	t.Helper()
	var out bytes.Buffer
	e := &env{stdout: &out, stderr: term, stderrIsTerminal: isTerminal, getenv: func(string) string { return "" }}
	done := make(chan int, 1)
	go func() { done <- run(context.Background(), e, args) }()
	return func() (int, string) {
		select {
		case code := <-done:
			return code, out.String()
		case <-time.After(testenv.WaitLimit()):
			t.Fatal("toolbench did not return")
			return 0, ""
		}
	}
}

func TestConnectLine(t *testing.T) {
	for _, tt := range []struct {
		p    upstream.Progress
		want string
	}{
		{upstream.Progress{Servers: 73, Ready: 12, Failed: 1, Pending: 60}, "connecting: 12/73 ready, 1 failed, 60 pending (8.2s)"},
		// Servers turned off in the config are not counted.
		{upstream.Progress{Servers: 4, Ready: 1, Pending: 1, Disabled: 2}, "connecting: 1/2 ready, 0 failed, 1 pending (8.2s)"},
	} {
		if got := connectLine(tt.p, 8200*time.Millisecond); got != tt.want {
			t.Errorf("connectLine(%+v) = %q, want %q", tt.p, got, tt.want)
		}
	}
}

// TestConnectProgress: while list connects, a terminal's stderr shows one
// line, redrawn in place with the counts of the moment, and erased at the
// end; the report itself is untouched.
func TestConnectProgress(t *testing.T) {
	defer func(d time.Duration) { connectProgressDelay = d }(connectProgressDelay)
	connectProgressDelay = 0
	bin := buildTestServer(t)
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// slow waits at its gate until the test has seen it pending.
	config := writeFile(t, "mcp.json", `{"mcpServers": {
		"fast": {"command": `+string(mustJSON(t, bin))+`},
		"slow": {"command": `+string(mustJSON(t, bin))+`, "args": ["-gate", `+string(mustJSON(t, gate))+`]},
		"off": {"command": "nowhere", "disabled": true}}}`)

	term := new(terminal)
	wait := startToolbench(t, term, true, "list", "--config", config)
	term.WaitFor(t, "\rconnecting: 1/2 ready, 0 failed, 1 pending (")
	if err := os.Remove(gate); err != nil {
		t.Fatal(err)
	}
	code, stdout := wait()
	stderr := term.String()
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%q", code, stdout, stderr)
	}
	if !strings.HasPrefix(stderr, "\rconnecting: 0/2 ready, 0 failed, 2 pending (") {
		t.Errorf("stderr does not start with the line of the start:\n%q", stderr)
	}
	for _, l := range strings.Split(stderr, "\r")[1:] {
		if !strings.HasSuffix(l, "\x1b[K") {
			t.Errorf("redraw %q does not clear to the end of the line", l)
		}
	}
	if !strings.HasSuffix(stderr, "\r\x1b[K") || strings.Contains(stderr, "\n") {
		t.Errorf("the line is not erased at the end, or a line was left:\n%q", stderr)
	}
	if strings.ContainsAny(stdout, "\r\x1b") || !strings.Contains(stdout, "3 servers: 2 ok, 0 failed, 1 disabled") {
		t.Errorf("stdout holds progress bytes or lacks the report:\n%q", stdout)
	}
}

// TestConnectProgressSilent: no progress bytes when stderr is not a
// terminal, or with --quiet.
func TestConnectProgressSilent(t *testing.T) {
	defer func(d time.Duration) { connectProgressDelay = d }(connectProgressDelay)
	connectProgressDelay = 0
	bin := buildTestServer(t)
	config := writeFile(t, "mcp.json", `{"mcpServers": {"demo": {"command": `+string(mustJSON(t, bin))+`}}}`)
	for _, tt := range []struct {
		name       string
		isTerminal bool
		args       []string
	}{
		{"not a terminal", false, []string{"list", "--config", config}},
		{"--quiet", true, []string{"list", "--config", config, "--quiet"}},
		{"tokens --quiet", true, []string{"tokens", "--config", config, "--quiet"}},
		{"eval --quiet", true, []string{"eval", "--config", config, "--queries", writeFile(t, "q.jsonl", `{"id":"1","query":"echo","gold":["demo__echo"]}`), "--quiet"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			term := new(terminal)
			code, stdout := startToolbench(t, term, tt.isTerminal, tt.args...)()
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, term)
			}
			if s := term.String(); strings.ContainsAny(s, "\r\x1b") || strings.Contains(s, "connecting:") {
				t.Errorf("stderr has progress bytes:\n%q", s)
			}
		})
	}
	// The same commands on a terminal without --quiet do draw (so the
	// silence above is --quiet's).
	for _, args := range [][]string{{"tokens", "--config", config}, {"run", "--config", config, "--base-url", "http://127.0.0.1:1", "task"}} {
		term := new(terminal)
		startToolbench(t, term, true, args...)()
		if !strings.Contains(term.String(), "\rconnecting: ") {
			t.Errorf("%s on a terminal: no progress line:\n%q", args[0], term)
		}
	}
}

// TestProgressETA: the time left is the measured rate of the recent work,
// not the mean since the bar started: a slow first unit (a model loading)
// does not inflate it, and a rate that drops halfway is followed. The old
// mean-since-start estimate is shown beside each case, to say what it got
// wrong.
func TestProgressETA(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	type step struct {
		at time.Duration // since start
		n  int
	}
	// steady returns n Adds of one unit, every, from first on.
	steady := func(first time.Duration, n int, every time.Duration) []step {
		var s []step
		for i := range n {
			s = append(s, step{first + time.Duration(i)*every, 1})
		}
		return s
	}
	for _, tt := range []struct {
		name  string
		total int
		adds  []step
		now   time.Duration
		want  time.Duration
	}{
		// 10 s of warm-up, then 1 unit/s: at 19 s, 10 done, 90 left.
		{"warm-up", 100, append([]step{{10 * time.Second, 1}}, steady(11*time.Second, 9, time.Second)...), 19 * time.Second, 90 * time.Second},
		// 10 units/s for 50 units (5 s), then 1 unit/s: at 15 s, 60 done.
		{"slows down", 100, append(steady(100*time.Millisecond, 50, 100*time.Millisecond), steady(6*time.Second, 10, time.Second)...), 15 * time.Second, 40 * time.Second},
		// One Add so far: the rate from start is all there is.
		{"one sample", 10, []step{{2 * time.Second, 1}}, 2 * time.Second, 18 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := &progress{w: io.Discard, enabled: true, total: tt.total, start: t0}
			for _, a := range tt.adds {
				p.addAt(a.n, t0.Add(a.at))
			}
			got, ok := p.eta(t0.Add(tt.now))
			mean := time.Duration(float64(tt.now) / float64(p.done) * float64(p.total-p.done))
			if !ok || (got-tt.want).Abs() > 500*time.Millisecond {
				t.Errorf("eta at %v with %d/%d done = %v (ok %v), want %v (the mean since start says %v)", tt.now, p.done, p.total, got, ok, tt.want, mean)
			}
		})
	}

	// Nothing done, or all done: no estimate.
	p := &progress{w: io.Discard, enabled: true, total: 5, start: t0}
	if _, ok := p.eta(t0.Add(time.Second)); ok {
		t.Error("eta with nothing done: want none")
	}
	p.addAt(5, t0.Add(time.Second))
	if _, ok := p.eta(t0.Add(2 * time.Second)); ok {
		t.Error("eta with all done: want none")
	}
}

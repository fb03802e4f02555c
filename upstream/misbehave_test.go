package upstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/upstream"
)

// Tests of servers that misbehave as real ones do: each uses a real child
// process (internal/testserver) and checks that no goroutine or process is
// left behind. Times are logged for the record, never asserted; waitLimit
// is only a hang guard.

// bigArgs returns tool arguments larger than a pipe's buffer (64 KiB).
func bigArgs() json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"text":%q}`, strings.Repeat("a", 256<<10)))
}

func TestWedgedServer(t *testing.T) {
	checkGoroutines(t)
	checkNoChildren(t)
	bin := testServerPath(t)
	cfg := writeConfig(t, t.TempDir(), map[string]any{
		"stuck": map[string]any{"command": bin, "args": []string{"-misbehave"}},
	})
	got := make(changes, 16)
	hub := startHub(t, cfg, &upstream.HubOptions{Backoff: 10 * time.Millisecond}, got.onChange)
	got.next(t) // the first listing

	if res, err := hub.Call(context.Background(), "stuck__wedge", nil); err != nil || res.Content != "wedged" {
		t.Fatalf("Call(wedge) = %+v, %v", res, err)
	}
	// The server no longer reads stdin: 256 KiB of arguments cannot be
	// written. The call returns by its ctx, as do calls queued behind it.
	// The session is killed only when a ctx ends while a write is blocked,
	// so the deadline leaves a loaded machine time to start the write.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	errs := make(chan error, 3)
	for range 3 {
		go func() {
			_, err := hub.Call(ctx, "stuck__echo", bigArgs())
			errs <- err
		}()
	}
	for range 3 {
		select {
		case err := <-errs:
			if !errors.Is(err, upstream.ErrServerUnavailable) && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Call to a wedged server: error = %v, want ErrServerUnavailable or the deadline", err)
			}
			if errors.Is(err, upstream.ErrServerUnavailable) {
				if !errors.Is(err, tool.ErrUnavailable) || !strings.Contains(err.Error(), "unavailable") {
					t.Errorf("error = %v, want it to wrap tool.ErrUnavailable and say unavailable", err)
				}
			}
		case <-time.After(waitLimit()):
			t.Fatal("Call to a wedged server did not return")
		}
	}
	t.Logf("3 calls with a 2s deadline to a wedged server returned after %v", time.Since(start))

	// The session was killed and the server restarted.
	if diff := summarize(got.next(t)); len(diff.Removed) == 0 {
		t.Errorf("after the wedge: change %+v, want the tools removed", diff)
	}
	got.next(t) // back
	if st := statusOf(t, hub, "stuck"); st.State != upstream.StateReady || st.Restarts != 1 || st.Err == nil || !strings.Contains(st.Err.Error(), "stopped reading") {
		t.Errorf("after the restart: state %s, %d restarts, error %v", st.State, st.Restarts, st.Err)
	}
	if res, err := hub.Call(context.Background(), "stuck__echo", bigArgs()); err != nil || len(res.Content) != 256<<10 {
		t.Errorf("Call after the restart: %d bytes, %v", len(res.Content), err)
	}

	// Wedged again, with a call that has no deadline at all: Close ends it.
	if _, err := hub.Call(context.Background(), "stuck__wedge", nil); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := hub.Call(context.Background(), "stuck__echo", bigArgs())
		done <- err
	}()
	time.Sleep(100 * time.Millisecond) // let the write block; not needed for correctness
	start = time.Now()
	if err := hub.Close(); err != nil {
		t.Error(err)
	}
	t.Logf("Close with a call blocked writing to a wedged server took %v", time.Since(start))
	select {
	case err := <-done:
		if !errors.Is(err, upstream.ErrClosed) {
			t.Errorf("call in flight at Close: error = %v, want ErrClosed", err)
		}
	case <-time.After(waitLimit()):
		t.Fatal("call in flight at Close did not return")
	}
}

func TestCloseWithCallsInFlight(t *testing.T) {
	checkGoroutines(t)
	checkNoChildren(t)
	bin := testServerPath(t)
	cfg := writeConfig(t, t.TempDir(), map[string]any{
		// With a call that never ends, neither server exits on stdin EOF.
		"slow": map[string]any{"command": bin, "args": []string{"-misbehave"}},
		"deaf": map[string]any{"command": bin, "args": []string{"-misbehave"}},
	})
	hub, err := upstream.NewHub(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit())
	defer cancel()
	if err := hub.Connect(ctx, nil); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	for _, name := range []string{"slow__block", "deaf__block"} {
		go func() {
			_, err := hub.Call(context.Background(), name, nil)
			done <- err
		}()
	}
	time.Sleep(200 * time.Millisecond) // let the calls reach the servers; not needed for correctness
	start := time.Now()
	closed := make(chan error, 1)
	go func() { closed <- hub.Close() }()
	for range 2 {
		select {
		case err := <-done:
			if !errors.Is(err, upstream.ErrClosed) {
				t.Errorf("call in flight at Close: error = %v, want ErrClosed", err)
			}
		case <-time.After(waitLimit()):
			t.Fatal("call in flight at Close did not return")
		}
	}
	t.Logf("calls in flight returned %v after Close began", time.Since(start))
	select {
	case err := <-closed:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(waitLimit()):
		t.Fatal("Close did not return")
	}
	t.Logf("Close with two calls that never answer took %v", time.Since(start))
}

func TestHungInitializeIsKilled(t *testing.T) {
	checkGoroutines(t)
	checkNoChildren(t)
	bin := testServerPath(t)
	servers := map[string]any{}
	for i := range 4 {
		servers[fmt.Sprintf("hang%d", i)] = map[string]any{"command": bin, "args": []string{"-mode", "hang"}, "timeout": "300ms"}
	}
	cfg := writeConfig(t, t.TempDir(), servers)
	start := time.Now()
	// One start slot: each hung server must give it back before the next
	// can start.
	hub := startHub(t, cfg, &upstream.HubOptions{MaxStarting: 1}, nil)
	elapsed := time.Since(start)
	for _, st := range hub.Status() {
		if st.State != upstream.StateFailed || !errors.Is(st.Err, context.DeadlineExceeded) {
			t.Errorf("%s: state %s, error %v; want failed, deadline exceeded", st.Name, st.State, st.Err)
		}
		// Honest: the attempt, not the cleanup after it. Generous bound:
		// a hang guard against the old 2s+2s graceful stop.
		if st.ConnectTime < 300*time.Millisecond || st.ConnectTime > 3*time.Second {
			t.Errorf("%s: ConnectTime %v, want about the 300ms timeout", st.Name, st.ConnectTime)
		}
		t.Logf("%s: ConnectTime %v", st.Name, st.ConnectTime)
	}
	t.Logf("4 servers hung in initialize, timeout 300ms, one start slot: Connect took %v", elapsed)
}

func TestStdoutNoise(t *testing.T) {
	checkGoroutines(t)
	checkNoChildren(t)
	bin := testServerPath(t)
	cfg := writeConfig(t, t.TempDir(), map[string]any{
		"chatty": map[string]any{"command": bin, "args": []string{"-noise", "-misbehave"}},
	})
	hub := startHub(t, cfg, nil, nil)
	if res, err := hub.Call(context.Background(), "chatty__log", nil); err != nil || res.Content != "logged" {
		t.Fatalf("Call(log) = %+v, %v", res, err)
	}
	if res, err := hub.Call(context.Background(), "chatty__echo", json.RawMessage(`{"text":"alive"}`)); err != nil || res.Content != "alive" {
		t.Errorf("Call(echo) after noise = %+v, %v", res, err)
	}
	st := statusOf(t, hub, "chatty")
	if st.State != upstream.StateReady || st.Restarts != 0 {
		t.Errorf("state %s, %d restarts; want ready, none", st.State, st.Restarts)
	}
	for _, want := range []string{`[stdout] {"level":30,"time"`, "[stdout] {garbage", "[stdout] [1, 2, 3]", `[stdout] {"level":30,"msg":"hi"}`} {
		if !strings.Contains(st.Stderr, want) {
			t.Errorf("stderr tail %q lacks %q", st.Stderr, want)
		}
	}
}

func TestStdoutLineTooLong(t *testing.T) {
	checkGoroutines(t)
	checkNoChildren(t)
	bin := testServerPath(t)
	cfg := writeConfig(t, t.TempDir(), map[string]any{
		"flood": map[string]any{"command": bin, "args": []string{"-misbehave"}},
		"calm":  map[string]any{"command": bin},
	})
	got := make(changes, 16)
	hub := startHub(t, cfg, &upstream.HubOptions{Backoff: 10 * time.Millisecond}, got.onChange)
	got.next(t)
	got.next(t)
	before := peakRSS(t)
	const mib = 300
	_, err := hub.Call(context.Background(), "flood__flood", json.RawMessage(fmt.Sprintf(`{"mib":%d}`, mib)))
	if !errors.Is(err, upstream.ErrServerUnavailable) {
		t.Errorf("Call(flood) error = %v, want ErrServerUnavailable", err)
	}
	if ch := summarize(got.next(t)); ch.Server != "flood" || len(ch.Removed) == 0 {
		t.Errorf("after the flood: change %+v, want flood's tools removed", ch)
	}
	after := peakRSS(t)
	t.Logf("a %d MiB stdout line: peak RSS %d MiB before, %d MiB after", mib, before>>20, after>>20)
	if res, err := hub.Call(context.Background(), "calm__echo", json.RawMessage(`{"text":"fine"}`)); err != nil || res.Content != "fine" {
		t.Errorf("the other server: %+v, %v", res, err)
	}
	if ch := summarize(got.next(t)); ch.Server != "flood" || len(ch.Added) == 0 {
		t.Errorf("change %+v, want flood back", ch)
	}
	if st := statusOf(t, hub, "flood"); st.Err == nil || !strings.Contains(st.Err.Error(), "longer than") {
		t.Errorf("flood: error %v, want the line length", st.Err)
	}
}

// peakRSS is the test process's peak resident set (VmHWM), 0 where /proc
// is missing.
func peakRSS(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		var kb int64
		if _, err := fmt.Sscanf(line, "VmHWM: %d kB", &kb); err == nil {
			return kb << 10
		}
	}
	return 0
}

func TestCallDuringRestart(t *testing.T) {
	checkGoroutines(t)
	checkNoChildren(t)
	bin := testServerPath(t)
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	cfg := writeConfig(t, dir, map[string]any{
		"flaky": map[string]any{"command": bin, "args": []string{"-gate", gate}},
	})
	got := make(changes, 16)
	hub := startHub(t, cfg, &upstream.HubOptions{Backoff: 10 * time.Millisecond}, got.onChange)
	got.next(t)
	_, _ = hub.Call(context.Background(), "flaky__crash", nil)
	got.next(t) // removed; the restart now waits at the gate
	t.Cleanup(func() { os.Remove(gate) })

	_, err := hub.Call(context.Background(), "flaky__echo", json.RawMessage(`{"text":"x"}`))
	if !errors.Is(err, tool.ErrUnavailable) || errors.Is(err, tool.ErrUnknown) {
		t.Errorf("call during restart: error = %v, want tool.ErrUnavailable, not tool.ErrUnknown", err)
	}
	_, err = hub.Call(context.Background(), "flaky__never_existed", nil)
	if !errors.Is(err, tool.ErrUnknown) || errors.Is(err, tool.ErrUnavailable) {
		t.Errorf("call of an unknown tool: error = %v, want tool.ErrUnknown", err)
	}
}

func TestBadInputSchemas(t *testing.T) {
	checkGoroutines(t)
	checkNoChildren(t)
	bin := testServerPath(t)
	cfg := writeConfig(t, t.TempDir(), map[string]any{
		"odd": map[string]any{"command": bin, "args": []string{"-mode", "badschemas"}},
	})
	hub := startHub(t, cfg, nil, nil)
	st := statusOf(t, hub, "odd")
	if st.State != upstream.StateReady {
		t.Fatalf("state %s (%v), want ready", st.State, st.Err)
	}
	got := map[string]string{}
	for _, tl := range hub.Tools() {
		got[tl.Name] = string(tl.InputSchema)
	}
	want := map[string]string{
		"odd__good":    `{"type":"object"}`,
		"odd__untyped": `{"properties":{"q":{"type":"string"}},"type":"object"}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	for _, w := range []string{`"untyped": input schema has no "type"`, `"number": input schema is 42`, `"string": input schema is "object"`,
		`"array": input schema is [1,2]`, `"typed_string": input schema has type "string"`} {
		found := false
		for _, got := range st.Warnings {
			found = found || strings.Contains(got, w)
		}
		if !found {
			t.Errorf("warnings %q lack %q", st.Warnings, w)
		}
	}
	if res, err := hub.Call(context.Background(), "odd__untyped", json.RawMessage(`{"q":"x"}`)); err != nil || res.Content != "ok" {
		t.Errorf("Call(untyped) = %+v, %v", res, err)
	}
}

package upstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/internal/testserver"
	"github.com/toolsift/toolsift/upstream"
)

func TestMain(m *testing.M) {
	testserver.Serve() // the test binary as the test server (testServerPath)
	if os.Getenv(orphanHelperEnv) != "" {
		orphanHelper()
		return
	}
	// Children start from a goroutine that lives as long as the process
	// (see proc_linux.go); start it now, so that the goroutine leak checks
	// do not count it.
	_ = upstream.StartProcess(exec.Command("/nonexistent/toolsift-warm-up"))
	os.Exit(testenv.Main(m))
}

// testServerPath returns the command of the test MCP server
// (internal/testserver): this test binary, under another name.
func testServerPath(t *testing.T) string {
	t.Helper()
	return testserver.Command(t)
}

// writeConfig writes an mcpServers file into dir and loads it.
func writeConfig(t *testing.T, dir string, servers map[string]any) *config.Config {
	t.Helper()
	data, err := json.Marshal(map[string]any{"mcpServers": servers})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestStdioServers(t *testing.T) {
	checkGoroutines(t)
	checkNoChildren(t)
	bin := testServerPath(t)
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TOOLSIFT_TEST_VALUE", "from the environment")
	cfg := writeConfig(t, dir, map[string]any{
		"plain": map[string]any{"command": bin, "args": []string{"-banner"}, "env": map[string]string{"TESTSERVER_VALUE": "${TOOLSIFT_TEST_VALUE}"}},
		"inner": map[string]any{"command": bin, "cwd": "sub"},
		"hangs": map[string]any{"command": bin, "args": []string{"-mode", "hang"}, "timeout": "1s"},
		"exits": map[string]any{"command": bin, "args": []string{"-mode", "exit"}},
		"nobin": map[string]any{"command": filepath.Join(dir, "no-such-server")},
	})
	hub := startHub(t, cfg, nil, nil)

	states := map[string]upstream.State{}
	for _, st := range hub.Status() {
		states[st.Name] = st.State
	}
	want := map[string]upstream.State{"plain": upstream.StateReady, "inner": upstream.StateReady, "hangs": upstream.StateFailed, "exits": upstream.StateFailed, "nobin": upstream.StateFailed}
	if diff := cmp.Diff(want, states); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
	for _, tt := range []struct {
		server      string
		err, stderr string
	}{
		{"hangs", "no answer in time", "hanging in initialize"},
		{"exits", "exit status 1", "TESTSERVER_TOKEN is not set"},
		{"nobin", "no-such-server", ""},
		// Not JSON on stdout: moved to the stderr tail, not fatal.
		{"plain", "", "[stdout] Test MCP Server running on stdio"},
	} {
		st := statusOf(t, hub, tt.server)
		if tt.err == "" && st.Err != nil {
			t.Errorf("%s: error = %v, want none", tt.server, st.Err)
		}
		if tt.err != "" && (st.Err == nil || !strings.Contains(st.Err.Error(), tt.err)) {
			t.Errorf("%s: error = %v, want it to mention %q", tt.server, st.Err, tt.err)
		}
		if !strings.Contains(st.Stderr, tt.stderr) {
			t.Errorf("%s: stderr tail = %q, want it to contain %q", tt.server, st.Stderr, tt.stderr)
		}
	}

	// Servers start in the config file's folder; a relative cwd resolves
	// against it; ${VAR} in env expands.
	for _, tt := range []struct {
		tool string
		want map[string]string
	}{
		{"plain__where", map[string]string{"cwd": dir, "value": "from the environment"}},
		{"inner__where", map[string]string{"cwd": filepath.Join(dir, "sub"), "value": ""}},
	} {
		res, err := hub.Call(context.Background(), tt.tool, nil)
		if err != nil {
			t.Fatalf("Call(%s): %v", tt.tool, err)
		}
		var got map[string]string
		if err := json.Unmarshal([]byte(res.Content), &got); err != nil {
			t.Fatalf("Call(%s) = %q: %v", tt.tool, res.Content, err)
		}
		// The temp dir may be reached through a symlink (macOS /var).
		for k, p := range got {
			if k == "cwd" {
				got[k], _ = filepath.EvalSymlinks(p)
				tt.want[k], _ = filepath.EvalSymlinks(tt.want[k])
			}
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Call(%s) (-want +got):\n%s", tt.tool, diff)
		}
	}
	res, err := hub.Call(context.Background(), "plain__echo", json.RawMessage(`{"text":"hello"}`))
	if err != nil || res.Content != "hello" || res.IsError {
		t.Errorf("Call(plain__echo) = %+v, %v", res, err)
	}
}

func TestStdioCrashRestart(t *testing.T) {
	checkGoroutines(t)
	checkNoChildren(t)
	bin := testServerPath(t)
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	cfg := writeConfig(t, dir, map[string]any{
		"flaky": map[string]any{"command": bin, "args": []string{"-gate", gate}},
		"calm":  map[string]any{"command": bin},
	})
	got := make(changes, 16)
	hub := startHub(t, cfg, &upstream.HubOptions{Backoff: 10 * time.Millisecond}, got.onChange)
	flakyTools := []string{"flaky__crash", "flaky__echo", "flaky__where"}
	initial := map[string]changeSummary{}
	for range 2 {
		ch := summarize(got.next(t))
		initial[ch.Server] = ch
	}
	if diff := cmp.Diff(changeSummary{Server: "flaky", Added: flakyTools}, initial["flaky"]); diff != "" {
		t.Errorf("initial change (-want +got):\n%s", diff)
	}

	// The crash ends the call with an error and the session with it.
	if _, err := hub.Call(context.Background(), "flaky__crash", nil); !errors.Is(err, upstream.ErrServerUnavailable) {
		t.Errorf("Call(flaky__crash) error = %v, want ErrServerUnavailable", err)
	}
	if diff := cmp.Diff(changeSummary{Server: "flaky", Removed: flakyTools}, summarize(got.next(t))); diff != "" {
		t.Errorf("change after the crash (-want +got):\n%s", diff)
	}

	// The restart waits at the gate: the tools are unavailable meanwhile,
	// and the other server is untouched.
	st := statusOf(t, hub, "flaky")
	if st.State != upstream.StateRestarting || !strings.Contains(st.Stderr, "crashing on purpose") {
		t.Errorf("while restarting: state %s, stderr %q", st.State, st.Stderr)
	}
	for _, tool := range hub.Tools() {
		if tool.Server == "flaky" {
			t.Errorf("Tools() still lists %s", tool.Name)
		}
	}
	if _, err := hub.Call(context.Background(), "flaky__echo", json.RawMessage(`{"text":"x"}`)); !errors.Is(err, upstream.ErrServerUnavailable) || !strings.Contains(err.Error(), "server flaky") {
		t.Errorf("Call during restart: error = %v, want ErrServerUnavailable naming server flaky", err)
	}
	if res, err := hub.Call(context.Background(), "calm__echo", json.RawMessage(`{"text":"still here"}`)); err != nil || res.Content != "still here" {
		t.Errorf("Call(calm__echo) = %+v, %v", res, err)
	}

	if err := os.Remove(gate); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(changeSummary{Server: "flaky", Added: flakyTools}, summarize(got.next(t))); diff != "" {
		t.Errorf("change after the restart (-want +got):\n%s", diff)
	}
	if res, err := hub.Call(context.Background(), "flaky__echo", json.RawMessage(`{"text":"back"}`)); err != nil || res.Content != "back" {
		t.Errorf("Call after restart = %+v, %v", res, err)
	}
	if st := statusOf(t, hub, "flaky"); st.State != upstream.StateReady || st.Restarts != 1 {
		t.Errorf("after restart: state %s, %d restarts; want ready, 1", st.State, st.Restarts)
	}
}

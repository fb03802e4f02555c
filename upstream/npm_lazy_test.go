package upstream_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolsift/toolsift/upstream"
)

// TestNPMLazy: real Node servers listed from the cache run no process
// until one of their tools is called, and then only that server runs.
func TestNPMLazy(t *testing.T) {
	dir := requireNPMServers(t)
	checkGoroutines(t)
	checkNoChildren(t)
	root, cache := t.TempDir(), t.TempDir()
	cfg := writeConfig(t, t.TempDir(), map[string]any{
		"everything": map[string]any{"command": "node", "args": []string{"node_modules/@modelcontextprotocol/server-everything/dist/index.js", "stdio"}, "cwd": dir},
		"filesystem": map[string]any{"command": "node", "args": []string{"node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", root}, "cwd": dir},
		"memory": map[string]any{"command": "node", "args": []string{"node_modules/@modelcontextprotocol/server-memory/dist/index.js"}, "cwd": dir,
			"env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(root, "memory.jsonl")}},
	})
	opts := &upstream.HubOptions{Timeout: waitLimit(), Store: dirStore(t, cache)}
	hub1 := startHub(t, cfg, opts, nil)
	want := toolNames(hub1.Tools())
	hub1.Close()

	nodes := func() []string {
		var out []string
		for _, c := range children(t) {
			if strings.HasSuffix(c, " node") && !strings.Contains(c, " Z ") {
				out = append(out, c)
			}
		}
		return out
	}
	deadline := time.Now().Add(waitLimit())
	for len(nodes()) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}

	hub := startHub(t, cfg, opts, nil)
	if n := nodes(); len(n) != 0 {
		t.Errorf("node processes after Connect: %v, want none", n)
	}
	if diff := cmp.Diff(want, toolNames(hub.Tools())); diff != "" {
		t.Errorf("cached tools (-want +got):\n%s", diff)
	}
	res, err := hub.Call(context.Background(), "memory__read_graph", nil)
	if err != nil || res.IsError {
		t.Fatalf("Call(memory__read_graph) = %+v, %v", res, err)
	}
	if n := nodes(); len(n) != 1 {
		t.Errorf("node processes after one call: %v, want one", n)
	}
	states := map[string]upstream.State{}
	for _, st := range hub.Status() {
		states[st.Name] = st.State
	}
	if diff := cmp.Diff(map[string]upstream.State{"everything": upstream.StateLazy, "filesystem": upstream.StateLazy, "memory": upstream.StateReady}, states); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
}

package upstream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/toolsift/toolsift/internal/npmtest"
	"github.com/toolsift/toolsift/upstream"
)

// npmDir holds the pinned reference servers; .ci/run installs them with
// npm ci from the lockfile.
const npmDir = "testdata/npm"

// requireNPMServers returns the folder of the reference servers (see
// npmtest.Dir).
func requireNPMServers(t *testing.T) string { return npmtest.Dir(t, npmDir) }

func TestNPMReferenceServers(t *testing.T) {
	dir := requireNPMServers(t)
	checkGoroutines(t)
	checkNoChildren(t)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("buy milk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, t.TempDir(), map[string]any{
		"everything": map[string]any{"command": "node", "args": []string{"node_modules/@modelcontextprotocol/server-everything/dist/index.js", "stdio"}, "cwd": dir},
		"filesystem": map[string]any{"command": "node", "args": []string{"node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", root}, "cwd": dir},
		"memory": map[string]any{"command": "node", "args": []string{"node_modules/@modelcontextprotocol/server-memory/dist/index.js"}, "cwd": dir,
			"env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(root, "memory.jsonl")}},
	})
	hub := startHub(t, cfg, &upstream.HubOptions{Timeout: waitLimit()}, nil)
	for _, st := range hub.Status() {
		if st.State != upstream.StateReady {
			t.Fatalf("%s: %s: %v\nstderr: %s", st.Name, st.State, st.Err, st.Stderr)
		}
	}
	have := map[string]bool{}
	for _, tool := range hub.Tools() {
		have[tool.Name] = true
		if !validName.MatchString(tool.Name) || tool.Hash == "" || len(tool.InputSchema) == 0 {
			t.Errorf("tool %+v: bad name, hash or schema", tool)
		}
	}
	for _, name := range []string{"everything__echo", "everything__get-tiny-image", "filesystem__read_text_file", "memory__create_entities", "memory__read_graph"} {
		if !have[name] {
			t.Errorf("no tool %s among %d", name, len(have))
		}
	}

	ctx := context.Background()
	tests := []struct {
		tool, args string
		isError    bool
		contains   []string
		excludes   []string
	}{
		{tool: "everything__echo", args: `{"message":"hi there"}`, contains: []string{"hi there"}},
		{tool: "everything__get-sum", args: `{"a":2,"b":40}`, contains: []string{"42"}},
		{tool: "everything__get-tiny-image", contains: []string{"[image: image/png,"}, excludes: []string{"iVBOR"}},
		{tool: "everything__get-structured-content", args: `{"location":"Chicago"}`, contains: []string{"temperature"}},
		{tool: "filesystem__read_text_file", args: fmt.Sprintf(`{"path":%q}`, filepath.Join(root, "notes.txt")), contains: []string{"buy milk"}},
		{tool: "filesystem__read_text_file", args: `{"path":"/etc/passwd"}`, isError: true, contains: []string{"denied"}},
		{tool: "memory__create_entities", args: `{"entities":[{"name":"toolsift","entityType":"project","observations":["written in Go"]}]}`, contains: []string{"toolsift"}},
		{tool: "memory__read_graph", contains: []string{"written in Go"}},
	}
	for _, tt := range tests {
		res, err := hub.Call(ctx, tt.tool, json.RawMessage(tt.args))
		if err != nil {
			t.Errorf("Call(%s): %v", tt.tool, err)
			continue
		}
		if res.IsError != tt.isError {
			t.Errorf("Call(%s): IsError = %v, want %v (content %q)", tt.tool, res.IsError, tt.isError, res.Content)
		}
		for _, s := range tt.contains {
			if !strings.Contains(res.Content, s) {
				t.Errorf("Call(%s) = %q, want it to contain %q", tt.tool, res.Content, s)
			}
		}
		for _, s := range tt.excludes {
			if strings.Contains(res.Content, s) {
				t.Errorf("Call(%s) = %q, must not contain %q", tt.tool, res.Content, s)
			}
		}
	}
}

func TestNPMOverHTTP(t *testing.T) {
	dir := requireNPMServers(t)
	checkGoroutines(t)
	streamable := startEverything(t, dir, "streamableHttp")
	sse := startEverything(t, dir, "sse")

	tests := []struct {
		name, url, typ string
	}{
		{"streamable", "http://" + streamable + "/mcp", "http"},
		{"streamable, type unset", "http://" + streamable + "/mcp", ""},
		{"sse", "http://" + sse + "/sse", "sse"},
		{"sse after streamable fails", "http://" + sse + "/sse", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := writeConfig(t, t.TempDir(), map[string]any{
				"web": map[string]any{"url": tt.url, "type": tt.typ, "headers": map[string]string{"X-Test": "1"}},
			})
			hub := startHub(t, cfg, nil, nil)
			st := statusOf(t, hub, "web")
			if st.State != upstream.StateReady || st.Tools < 10 {
				t.Fatalf("web: %s with %d tools: %v", st.State, st.Tools, st.Err)
			}
			res, err := hub.Call(context.Background(), "web__echo", json.RawMessage(`{"message":"over http"}`))
			if err != nil || !strings.Contains(res.Content, "over http") {
				t.Errorf("Call(web__echo) = %+v, %v", res, err)
			}
		})
	}
}

// startEverything runs server-everything in an HTTP mode on a free loopback
// port until the test ends, and returns its address.
func startEverything(t *testing.T, dir, mode string) string {
	t.Helper()
	port, _ := npmtest.StartNode(t, dir, nil, "node_modules/@modelcontextprotocol/server-everything/dist/index.js", mode)
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

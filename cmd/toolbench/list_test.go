package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/toolsift/toolsift/internal/npmtest"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/internal/testserver"
	"github.com/toolsift/toolsift/upstream"
)

// buildTestServer returns the command of the test MCP server
// (internal/testserver): this test binary, under another name.
func buildTestServer(t *testing.T) string {
	t.Helper()
	return testserver.Command(t)
}

func TestList(t *testing.T) {
	bin := buildTestServer(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "mcp.json")
	servers := map[string]any{"mcpServers": map[string]any{
		"good":  map[string]any{"command": bin, "disabledTools": []string{"crash"}},
		"other": map[string]any{"command": bin, "allowedTools": []string{"echo"}},
		"bad":   map[string]any{"command": bin, "args": []string{"-mode", "exit"}},
	}}
	data, _ := json.Marshal(servers)
	if err := os.WriteFile(config, data, 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("table", func(t *testing.T) {
		code, stdout, stderr := runToolbench(t, "list", "--config", config, "--timeout", testenv.WaitLimit().String())
		// A failed server fails list, so that scripts and CI can tell.
		if code != 1 || !strings.Contains(stderr, "1 server failed: bad") {
			t.Fatalf("exit %d, want 1 naming the failed server; stderr:\n%s", code, stderr)
		}
		for _, want := range []string{
			"good ", "other ", "bad ",
			"bad failed: server bad: connect:",
			"TESTSERVER_TOKEN is not set", // the failing server's stderr tail
			"3 servers: 2 ok, 1 failed; 3 tools;",
		} {
			if !strings.Contains(stdout, want) {
				t.Errorf("output lacks %q:\n%s", want, stdout)
			}
		}
	})

	t.Run("json", func(t *testing.T) {
		code, stdout, stderr := runToolbench(t, "list", "--config", config, "--json")
		if code != 1 {
			t.Fatalf("exit %d; stderr:\n%s", code, stderr)
		}
		var got []string
		for line := range strings.Lines(stdout) {
			// A tools.jsonl record (docs/measurements.md, "Data and machine").
			var tool struct {
				Name         string          `json:"name"`
				Server       string          `json:"server"`
				OriginalName string          `json:"original_name"`
				Description  string          `json:"description"`
				InputSchema  json.RawMessage `json:"inputSchema"`
			}
			if err := json.Unmarshal([]byte(line), &tool); err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			if tool.Description == "" || !json.Valid(tool.InputSchema) {
				t.Errorf("tool %+v lacks a description or schema", tool)
			}
			got = append(got, tool.Name+" "+tool.Server+" "+tool.OriginalName)
		}
		want := []string{"good__echo good echo", "good__where good where", "other__echo other echo"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("--json tools (-want +got):\n%s", diff)
		}
		// The second list serves good and other from the cache the first wrote.
		if !strings.Contains(stderr, "3 servers: 0 ok, 2 from cache, 1 failed; 3 tools;") {
			t.Errorf("--json: statuses belong on stderr, got:\n%s", stderr)
		}
	})

	t.Run("bad config", func(t *testing.T) {
		bad := filepath.Join(dir, "bad.json")
		if err := os.WriteFile(bad, []byte(`{"mcpServers": {"x": {"url": "ftp://nowhere"}}}`), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := runToolbench(t, "list", "--config", bad)
		if code != 1 || !strings.Contains(stderr, `server "x"`) {
			t.Errorf("exit %d, stderr %q; want 1 and an error naming server x", code, stderr)
		}
	})

	t.Run("no config flag", func(t *testing.T) {
		if code, _, stderr := runToolbench(t, "list"); code != 2 || !strings.HasPrefix(stderr, "toolbench list: --config is required\n\nUsage: toolbench list") {
			t.Errorf("exit %d, want 2 with the reason and usage; stderr:\n%s", code, stderr)
		}
	})
}

// TestListInputs: a VS Code config whose server needs an input fails only
// that server (list exits 1 naming the input); given --input, everything
// connects and list exits 0. The value is never printed.
func TestListInputs(t *testing.T) {
	bin := buildTestServer(t)
	config := writeFile(t, "mcp.json", `// VS Code's form
{
  "inputs": [{"id": "token", "type": "promptString", "password": true}],
  "servers": {
    "plain": {"type": "stdio", "command": `+string(mustJSON(t, bin))+`},
    "secret": {"type": "stdio", "command": `+string(mustJSON(t, bin))+`, "env": {"TESTSERVER_TOKEN": "${input:token}"}},
  },
}`)
	code, stdout, stderr := runToolbench(t, "list", "--config", config)
	if code != 1 || !strings.Contains(stdout, `input "token" has no value`) || !strings.Contains(stdout, "give it with --input token=VALUE") || !strings.Contains(stderr, "1 server failed: secret") {
		t.Errorf("without --input: exit %d, want 1 naming the input and server\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = runToolbench(t, "list", "--config", config, "--input", "token=hunter2")
	// plain from the cache of the first run; secret, which has no entry, started.
	if code != 0 || !strings.Contains(stdout, "2 servers: 1 ok, 1 from cache, 0 failed") || !strings.Contains(stdout, "1 server started: no cache entry") {
		t.Errorf("with --input: exit %d, want 0 with both servers ok\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if strings.Contains(stdout+stderr, "hunter2") {
		t.Errorf("the input's value was printed")
	}
}

// TestListFromCache: list serves a server whose tool list is in the cache
// from it, without starting it (its binary is gone by then), and says so
// with the list's age; --connect starts every server, and a server with no
// cache entry is started and said to be.
func TestListFromCache(t *testing.T) {
	bin := buildTestServer(t)
	gone := filepath.Join(t.TempDir(), "testserver")
	if err := os.Link(bin, gone); err != nil {
		t.Fatal(err)
	}
	config := writeFile(t, "mcp.json", string(mustJSON(t, map[string]any{"mcpServers": map[string]any{
		"kept":  map[string]any{"command": bin},
		"moved": map[string]any{"command": gone},
	}})))
	code, stdout, stderr := runToolbench(t, "list", "--config", config)
	if code != 0 || !strings.Contains(stdout, "2 servers: 2 ok, 0 failed") || strings.Contains(stdout, "from cache") {
		t.Fatalf("first list: exit %d, want both started (nothing cached yet)\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}

	code, stdout, stderr = runToolbench(t, "list", "--config", config)
	if code != 0 {
		t.Fatalf("from cache: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"2 servers: 0 ok, 2 from cache, 0 failed; 6 tools;",
		"tools of 2 servers from cache, 0 s old (--connect starts them)",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("from cache: output lacks %q:\n%s", want, stdout)
		}
	}
	if !regexp.MustCompile(`(?m)^moved +cached +3 +-`).MatchString(stdout) {
		t.Errorf("from cache: want moved's row as cached, 3 tools, no connect time:\n%s", stdout)
	}

	for _, flag := range []string{"--connect", "--eager"} {
		code, stdout, stderr = runToolbench(t, "list", "--config", config, flag)
		if code != 1 || !strings.Contains(stderr, "1 server failed: moved") || !strings.Contains(stdout, "2 servers: 1 ok, 1 failed") {
			t.Errorf("%s: exit %d, want 1 with moved failed (its binary is gone)\nstdout:\n%s\nstderr:\n%s", flag, code, stdout, stderr)
		}
	}
}

func TestCacheNote(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		statuses []upstream.ServerStatus
		want     string
	}{
		{[]upstream.ServerStatus{{State: upstream.StateReady}}, ""},
		{[]upstream.ServerStatus{
			{State: upstream.StateLazy, FromCache: true, CachedAt: now.Add(-3*time.Hour - 20*time.Minute)},
			{State: upstream.StateLazy, FromCache: true, CachedAt: now.Add(-time.Minute)},
			{State: upstream.StateReady},
			{State: upstream.StateFailed},
		}, "tools of 2 servers from cache, 3 h old (--connect starts them); 1 server started: no cache entry"},
		{[]upstream.ServerStatus{{State: upstream.StateLazy, FromCache: true, CachedAt: now.Add(-50 * time.Hour)}}, "tools of 1 server from cache, 2 days old (--connect starts them)"},
	} {
		if got := cacheNote(tt.statuses, now); got != tt.want {
			t.Errorf("cacheNote = %q, want %q", got, tt.want)
		}
	}
}

// referenceConfig writes an mcp.json of the npm reference servers
// (everything, filesystem, memory) and the upstream package's test server, or
// skips when the npm servers are not installed (CI installs them).
func referenceConfig(t *testing.T) string {
	t.Helper()
	npm := npmtest.Dir(t, "../../upstream/testdata/npm")
	root := t.TempDir()
	servers := map[string]any{
		"everything": map[string]any{"command": "node", "args": []string{"node_modules/@modelcontextprotocol/server-everything/dist/index.js", "stdio"}, "cwd": npm},
		"filesystem": map[string]any{"command": "node", "args": []string{"node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", root}, "cwd": npm},
		"memory": map[string]any{"command": "node", "args": []string{"node_modules/@modelcontextprotocol/server-memory/dist/index.js"}, "cwd": npm,
			"env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(root, "memory.jsonl")}},
		"demo": map[string]any{"command": buildTestServer(t)},
	}
	return writeFile(t, "mcp.json", string(mustJSON(t, map[string]any{"mcpServers": servers})))
}

// TestListJSONRoundTrip: what list --json prints is a tools.jsonl that eval
// --tools reads as it is, with the names eval --config uses for the same
// live servers, so the two evaluations agree tool for tool.
func TestListJSONRoundTrip(t *testing.T) {
	config := referenceConfig(t)
	code, listed, stderr := runToolbench(t, "list", "--config", config, "--json", "--timeout", testenv.WaitLimit().String())
	if code != 0 {
		t.Fatalf("list --json: exit %d\n%s", code, stderr)
	}
	tools := writeFile(t, "tools.jsonl", listed)
	queries := writeFile(t, "queries.jsonl", `{"id":"echo","query":"echo my message back","gold":["everything__echo"]}
{"id":"read","query":"read the text of a file","gold":["filesystem__read_text_file"]}
{"id":"graph","query":"show the whole knowledge graph","gold":["memory__read_graph"]}
{"id":"where","query":"which directory does the server run in","gold":["demo__where"]}
`)

	// Rankings as deep as the catalog: every tool, in order, per query.
	eval := func(source ...string) (evalReport, []rankingLine) {
		t.Helper()
		rankings := filepath.Join(t.TempDir(), "rankings.jsonl")
		args := append([]string{"eval", "--queries", queries, "--k", "1,100", "--json", "--rankings", rankings, "--timeout", testenv.WaitLimit().String()}, source...)
		code, stdout, stderr := runToolbench(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", source, code, stderr)
		}
		var rep evalReport
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(rankings)
		if err != nil {
			t.Fatal(err)
		}
		var lines []rankingLine
		for l := range strings.Lines(string(b)) {
			var r rankingLine
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatal(err)
			}
			lines = append(lines, r)
		}
		return rep, lines
	}
	fromFile, fileRanks := eval("--tools", tools)
	live, liveRanks := eval("--config", config)

	var names []string
	for l := range strings.Lines(listed) {
		var r struct{ Name string }
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		names = append(names, r.Name)
	}
	if len(names) < 30 || fromFile.Queries != 4 || live.Queries != 4 {
		t.Fatalf("%d tools listed; %d and %d queries evaluated, want all 4 (skipped: %v, %v)", len(names), fromFile.Queries, live.Queries, fromFile.Skipped, live.Skipped)
	}
	ranked := slices.Sorted(slices.Values(liveRanks[0].Ranked))
	if diff := cmp.Diff(names, ranked); diff != "" {
		t.Errorf("names listed vs ranked by eval --config (-listed +config):\n%s", diff)
	}
	if diff := cmp.Diff(liveRanks, fileRanks); diff != "" {
		t.Errorf("rankings (-config +tools file):\n%s", diff)
	}
	if fromFile.Tools != live.Tools || fromFile.AllToolsTokens != live.AllToolsTokens {
		t.Errorf("tools file: %d tools, %d tokens; config: %d tools, %d tokens", fromFile.Tools, fromFile.AllToolsTokens, live.Tools, live.AllToolsTokens)
	}
}

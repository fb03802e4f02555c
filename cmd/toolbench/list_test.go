package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// buildTestServer builds the mcp package's test MCP server.
func buildTestServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "testserver")
	out, err := exec.Command("go", "build", "-o", bin, "../../mcp/testdata/testserver").CombinedOutput()
	if err != nil {
		t.Fatalf("go build testserver: %v\n%s", err, out)
	}
	return bin
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
		code, stdout, stderr := runToolbench(t, "list", "--config", config, "--timeout", "20s")
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
			var tool struct {
				Server        string          `json:"server"`
				Name          string          `json:"name"`
				QualifiedName string          `json:"qualified_name"`
				Description   string          `json:"description"`
				InputSchema   json.RawMessage `json:"input_schema"`
			}
			if err := json.Unmarshal([]byte(line), &tool); err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			if tool.Description == "" || !json.Valid(tool.InputSchema) {
				t.Errorf("tool %+v lacks a description or schema", tool)
			}
			got = append(got, tool.Server+" "+tool.Name+" "+tool.QualifiedName)
		}
		want := []string{"good echo good__echo", "good where good__where", "other echo other__echo"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("--json tools (-want +got):\n%s", diff)
		}
		if !strings.Contains(stderr, "3 servers: 2 ok, 1 failed; 3 tools;") {
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
	if code != 1 || !strings.Contains(stdout, `input "token" has no value`) || !strings.Contains(stderr, "1 server failed: secret") {
		t.Errorf("without --input: exit %d, want 1 naming the input and server\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = runToolbench(t, "list", "--config", config, "--input", "token=hunter2")
	if code != 0 || !strings.Contains(stdout, "2 servers: 2 ok, 0 failed") {
		t.Errorf("with --input: exit %d, want 0 with both servers ok\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if strings.Contains(stdout+stderr, "hunter2") {
		t.Errorf("the input's value was printed")
	}
}

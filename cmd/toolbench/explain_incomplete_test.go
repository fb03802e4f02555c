package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/think"
)

// TestExplainNamesFailedServers: explain over a config with a server that
// failed says so, in the table and in --json: its tools were not
// considered and will not come.
func TestExplainNamesFailedServers(t *testing.T) {
	bin := buildTestServer(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "mcp.json")
	data, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"good": map[string]any{"command": bin},
		"bad":  map[string]any{"command": bin, "args": []string{"-mode", "exit"}},
	}})
	if err := os.WriteFile(config, data, 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"explain", "--no-cache", "--config", config, "--timeout", testenv.WaitLimit().String(), "echo this text", "good__echo"}
	code, stdout, stderr := runToolbench(t, args...)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if want := "not considered: 1 server failed (bad): its tools are not available."; !strings.Contains(stdout, want) {
		t.Errorf("explain lacks %q:\n%s", want, stdout)
	}
	code, stdout, stderr = runToolbench(t, append(args, "--json")...)
	if code != 0 {
		t.Fatalf("--json: exit %d, stderr:\n%s", code, stderr)
	}
	var rep explainReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout)
	}
	if diff := cmp.Diff(think.NewIncomplete(nil, []string{"bad"}), rep.Incomplete); diff != "" {
		t.Errorf("--json incomplete (-want +got):\n%s", diff)
	}
}

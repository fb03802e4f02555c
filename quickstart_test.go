package toolsift_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/toolsift/toolsift/internal/agenttest"
	"github.com/toolsift/toolsift/tool"
	// The README program's one import that this package's tests lack: as
	// a dependency of this test binary it is compiled (and cached) before
	// TestQuickStart runs, which then builds the program from the cache
	// instead of compiling openai-go a second time beside go test.
	_ "github.com/toolsift/toolsift/agent/openaimodel"
)

// TestQuickStart runs the README's Go program as written, built in a fresh
// module that requires this one (with -race under -race), against the three pinned reference MCP
// servers and a scripted OpenAI-compatible server. The script calls the
// tool the task names only if the first request offers it, and answers with
// the tool's own result, so the printed answer proves the whole path:
// config → servers → index → Think → model → call → answer. A fourth
// server has a typo in its path: it fails, visibly, and the others work.
func TestQuickStart(t *testing.T) {
	npm := requireNPMServers(t)
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```go\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no ```go block")
	}

	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("main.go", string(m[1]))
	goMod := "module quickstart\n\ngo 1.26\n\nrequire github.com/toolsift/toolsift v0.0.0\n\nreplace github.com/toolsift/toolsift => " + root + "\n"
	write("go.mod", goMod)
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	write("go.sum", string(sum))
	data := t.TempDir()
	cfg, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": "node", "args": []string{filepath.Join(npm, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"), "stdio"}},
		"filesystem": map[string]any{"command": "node", "args": []string{filepath.Join(npm, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"), data}},
		"memory": map[string]any{"command": "node", "args": []string{filepath.Join(npm, "node_modules/@modelcontextprotocol/server-memory/dist/index.js")},
			"env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(data, "memory.jsonl")}},
		// A typo in a path, the mistake a new user makes: the other
		// servers work, and the failure is in plain sight.
		"typo": map[string]any{"command": "node", "args": []string{filepath.Join(npm, "node_modules/@modelcontextprotocol/server-everythin/dist/index.js")}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	write("mcp.json", string(cfg))

	srv := agenttest.NewServerFunc(func(req agenttest.Request) agenttest.Reply {
		for _, msg := range req.Messages {
			if msg.Role == tool.RoleTool {
				return agenttest.Reply{Content: "The sum is: " + msg.Content}
			}
		}
		if slices.Contains(req.ToolNames(), "everything__get-sum") {
			return agenttest.Reply{ToolCalls: []tool.ToolCall{{Name: "everything__get-sum", Arguments: `{"a":17,"b":25}`}}}
		}
		return agenttest.Reply{Content: "get-sum was not offered: " + strings.Join(req.ToolNames(), ",")}
	})
	defer srv.Close()

	args := []string{"run", "."}
	if raceEnabled {
		// Compiled as the test binary is, so that every package comes from
		// the build cache the test command is filling (a -race build shares
		// nothing with a plain one).
		args = []string{"run", "-race", "."}
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	// Offline, like CI: every module comes from the cache the main module
	// already filled.
	// The GOFLAGS of the test command (its build flags) are kept, so that
	// the program compiles as the test binary did.
	goflags := strings.TrimSpace(os.Getenv("GOFLAGS") + " -mod=mod")
	cmd.Env = append(os.Environ(), "OPENAI_BASE_URL="+srv.URL, "OPENAI_API_KEY=sk-test", "GOFLAGS="+goflags, "GOPROXY=off", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the quick start failed: %v\n%s", err, out)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2; output:\n%s", len(reqs), out)
	}
	if !slices.Contains(reqs[0].ToolNames(), "everything__get-sum") {
		t.Errorf("first request offers %q, want everything__get-sum", reqs[0].ToolNames())
	}
	if !strings.Contains(string(out), "42") {
		t.Errorf("answer does not carry the tool's result 42:\n%s", out)
	}
	// The failed server: warned about on stderr once by the library (no
	// Logger given), and printed by the program from Status.
	if n := strings.Count(string(out), "server failed"); n != 1 || !regexp.MustCompile(`server failed.*server=typo`).Match(out) {
		t.Errorf("want one stderr warning naming server typo, got %d:\n%s", n, out)
	}
	if !strings.Contains(string(out), "server typo: failed: ") {
		t.Errorf("the program did not print the failed server from Status:\n%s", out)
	}
}

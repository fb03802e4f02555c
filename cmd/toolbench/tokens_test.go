package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolsift/toolsift/budget"
	"github.com/toolsift/toolsift/internal/testserver"
	"github.com/toolsift/toolsift/tool"
)

const tokensTestTools = `{"server":"files","name":"read_file","description":"Read a file. Returns its text.","inputSchema":{"type":"object","properties":{"path":{"type":"string","description":"Path of the file to read"}},"required":["path"]}}
{"server":"files","name":"search","description":"Search files by content.\nLong explanation of the syntax follows here, over several lines.","inputSchema":{"type":"object","properties":{"q":{"type":"string","description":"Query"},"limit":{"type":"integer","default":10,"description":"At most this many"}}}}
{"server":"web","name":"search","description":"Search the web.","inputSchema":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}}
`

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTokensJSON(t *testing.T) {
	path := writeFile(t, "tools.jsonl", tokensTestTools)
	code, stdout, stderr := runToolbench(t, "tokens", "--tools", path, "--json", "--model", "gpt-4o", "--top", "2")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "naming every tool server__name") {
		t.Errorf("stderr does not explain the renaming of repeated names:\n%s", stderr)
	}
	var rep tokensReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout)
	}

	// Recount with the budget package directly.
	tok, err := budget.NewTokenizer("", "o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	want := tokensReport{Encoding: "o200k_base", Tools: 3, Tiers: map[string]int{}, Servers: map[string]serverTokens{},
		RequestOverhead: budget.ToolsRequestOverhead + 3*budget.ToolOverheadO200K}
	type rec struct {
		Server, Name, Description string
		InputSchema               json.RawMessage
	}
	var all []toolTokens
	for _, line := range strings.Split(strings.TrimSpace(tokensTestTools), "\n") {
		var r rec
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		tool := tool.Tool{Name: r.Server + "__" + r.Name, Description: r.Description, InputSchema: r.InputSchema}
		tt := toolTokens{Name: tool.Name, Server: r.Server, Tiers: map[string]int{}}
		s := want.Servers[r.Server]
		if s.Tiers == nil {
			s.Tiers = map[string]int{}
		}
		s.Tools++
		for tier := range budget.Tier(budget.NumTiers) {
			rd, err := tok.CountTool(tool, tier)
			if err != nil {
				t.Fatal(err)
			}
			tt.Tiers[tier.String()] = rd.Tokens
			want.Tiers[tier.String()] += rd.Tokens
			s.Tiers[tier.String()] += rd.Tokens
		}
		tt.Tokens = tt.Tiers["full"]
		s.Tokens += tt.Tokens
		want.TotalTokens += tt.Tokens
		want.Servers[r.Server] = s
		all = append(all, tt)
	}
	// Largest first: the two files tools outweigh web's one-liner.
	if all[0].Tokens < all[1].Tokens {
		all[0], all[1] = all[1], all[0]
	}
	want.Largest = all[:2]
	if diff := cmp.Diff(want, rep); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
	if !(rep.Tiers["full"] > rep.Tiers["no-param-docs"] && rep.Tiers["no-param-docs"] > rep.Tiers["short-description"]) {
		t.Errorf("tiers do not shrink: %v", rep.Tiers)
	}
}

func TestTokensText(t *testing.T) {
	path := writeFile(t, "tools.jsonl", tokensTestTools)
	code, stdout, stderr := runToolbench(t, "tokens", "--tools", path, "--encoding", "cl100k_base")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	for _, want := range []string{"3 tools from 2 servers, encoding cl100k_base", "short-description", "TOTAL", "LARGEST 3 TOOLS", "files__search", "per tool"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
}

func TestTokensErrors(t *testing.T) {
	tools := writeFile(t, "tools.jsonl", tokensTestTools)
	bad := writeFile(t, "bad.jsonl", "{\"name\":\"ok\"}\n{\"name\":\"broken\",\"inputSchema\":[1]}\n")
	tests := []struct {
		name     string
		args     []string
		code     int
		inStderr string
	}{
		{"no source", []string{"tokens"}, 2, "toolbench tokens: --config or --tools is required\n\nUsage: toolbench tokens"},
		{"two sources", []string{"tokens", "--tools", tools, "--config", "x.json"}, 2, "toolbench tokens: --config and --tools are exclusive"},
		{"negative top", []string{"tokens", "--tools", tools, "--top", "-1"}, 2, "toolbench tokens: --top -1: want 0 or more"},
		{"unknown encoding", []string{"tokens", "--tools", tools, "--encoding", "o300k_base"}, 1, `unknown encoding "o300k_base"`},
		{"missing file", []string{"tokens", "--tools", "/nonexistent/tools.jsonl"}, 1, "/nonexistent/tools.jsonl"},
		{"schema not an object", []string{"tokens", "--tools", bad}, 1, `tool "broken"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runToolbench(t, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.inStderr) {
				t.Errorf("exit %d, stderr %q; want exit %d with %q", code, stderr, tt.code, tt.inStderr)
			}
		})
	}
}

// TestTokensConfig measures the tools of a real MCP server over stdio: the
// test server of internal/testserver.
func TestTokensConfig(t *testing.T) {
	bin := testserver.Command(t)
	cfg := writeFile(t, "mcp.json", `{"mcpServers":{"demo":{"command":`+string(mustJSON(t, bin))+`}}}`)
	code, stdout, stderr := runToolbench(t, "tokens", "--config", cfg, "--json")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	var rep tokensReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout)
	}
	if rep.Tools == 0 || rep.Servers["demo"].Tools != rep.Tools || rep.TotalTokens == 0 || rep.TotalTokens != rep.Servers["demo"].Tokens {
		t.Errorf("report = %+v; want the demo server's tools, counted", rep)
	}
	for _, l := range rep.Largest {
		if !strings.HasPrefix(l.Name, "demo__") {
			t.Errorf("tool %q is not named as the hub sends it", l.Name)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

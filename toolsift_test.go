package toolsift_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/mcp"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
)

// TestOpenReportsBrokenServers: servers that cannot start, or lack an input
// value, are reported per server; Open succeeds with the others, and their
// tools are indexed by the time it returns.
func TestOpenReportsBrokenServers(t *testing.T) {
	dir := t.TempDir()
	cfg := `{
  // VS Code form, with an input nobody gave a value for
  "inputs": [{"type": "promptString", "id": "token", "description": "API token", "password": true}],
  "servers": {
    "missing": {"type": "stdio", "command": "/nonexistent/toolsift-no-such-server"},
    "needs-input": {"type": "stdio", "command": "node", "env": {"TOKEN": "${input:token}"}},
  },
}`
	path := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ts, err := toolsift.Open(ctx, path, &toolsift.Options{Hub: mcp.HubOptions{Timeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	got := map[string]mcp.ServerStatus{}
	for _, st := range ts.Status() {
		got[st.Name] = st
	}
	if st := got["missing"]; st.State != mcp.StateFailed || st.Err == nil {
		t.Errorf("missing: %s %v; want failed with a reason", st.State, st.Err)
	}
	if st := got["needs-input"]; st.State != mcp.StateFailed || st.Err == nil || !strings.Contains(st.Err.Error(), "token") {
		t.Errorf("needs-input: %s %v; want failed naming the input", st.State, st.Err)
	}
	if len(ts.Tools()) != 0 {
		t.Errorf("tools %v from broken servers", ts.Tools())
	}
}

// TestOpenConfigLocalTools: local Go functions through an in-code config are
// listed, searched, chosen and called like any server's tools.
func TestOpenConfigLocalTools(t *testing.T) {
	local, err := mcp.LocalServer(
		mcp.LocalTool{Name: "add", Description: "Add two numbers and return the sum.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}}}`),
			Handler: func(_ context.Context, args json.RawMessage) (string, error) {
				var in struct{ A, B float64 }
				if err := json.Unmarshal(args, &in); err != nil {
					return "", err
				}
				return strconv.FormatFloat(in.A+in.B, 'f', -1, 64), nil
			}},
		mcp.LocalTool{Name: "greet", Description: "Say hello to someone.", Handler: func(context.Context, json.RawMessage) (string, error) { return "hello", nil }},
	)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ts, err := toolsift.OpenConfig(ctx, &config.Config{Servers: map[string]config.Server{"calc": local}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	if n := len(ts.Tools()); n != 2 {
		t.Fatalf("%d tools indexed when Open returned, want 2", n)
	}
	found, err := ts.Search(ctx, "sum of two numbers", 1)
	if err != nil || len(found) != 1 || found[0].Tool.Name != "calc__add" {
		t.Fatalf("Search = %v, %v; want calc__add", found, err)
	}
	off, err := ts.Think(ctx, think.Request{})
	if err != nil || !off.Everything || len(off.Tools) != 2 {
		t.Fatalf("Think = %+v, %v; want both tools (everything fits)", off, err)
	}
	res, err := ts.Call(ctx, "calc__add", json.RawMessage(`{"a":17,"b":25}`))
	if err != nil || res.Content != "42" {
		t.Fatalf("Call = %+v, %v; want 42", res, err)
	}
	if _, err := ts.Call(ctx, "calc__nope", nil); !errors.Is(err, tool.ErrUnknown) {
		t.Errorf("unknown tool: %v, want tool.ErrUnknown", err)
	}
	if err := ts.Refresh(ctx); err != nil {
		t.Errorf("Refresh: %v", err)
	}
}

func TestOpenRejects(t *testing.T) {
	ctx := context.Background()
	if _, err := toolsift.Open(ctx, filepath.Join(t.TempDir(), "none.json"), nil); !errors.Is(err, config.ErrInvalid) {
		t.Errorf("missing file: %v, want config.ErrInvalid", err)
	}
	bad := &toolsift.Options{Hub: mcp.HubOptions{OnChange: func(context.Context, tool.Change) error { return nil }}}
	if _, err := toolsift.OpenConfig(ctx, nil, bad); !errors.Is(err, toolsift.ErrOptions) {
		t.Errorf("Hub.OnChange set: %v, want ErrOptions", err)
	}
	if _, err := toolsift.OpenConfig(ctx, nil, &toolsift.Options{Encoding: "no-such-encoding"}); !errors.Is(err, toolsift.ErrOptions) {
		t.Errorf("bad encoding: %v, want ErrOptions", err)
	}
}

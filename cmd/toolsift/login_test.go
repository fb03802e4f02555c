package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/internal/oauthtest"
)

// TestServeNeedsLogin: a url server that needs a login (a real OAuth
// authorization server and protected MCP endpoint) fails at once, alone,
// with a log line naming toolbench login; serve neither waits on a browser
// nor sends a token it does not have, and the other servers are served.
func TestServeNeedsLogin(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "read_notes", Description: "Read the notes."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "notes"}}}, nil, nil
		})
	as := oauthtest.New(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true}), nil)
	defer as.Close()

	dir := t.TempDir()
	config := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(config, fmt.Appendf(nil, `{"mcpServers": {
		"notes": {"type": "http", "url": %q},
		"gone": {"command": "/nonexistent/toolsift-test-server"}
	}}`, as.URL), 0o600); err != nil {
		t.Fatal(err)
	}
	xdg := filepath.Join(dir, "xdg")
	var stdout, stderr strings.Builder
	e := &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, getenv: func(k string) string {
		if k == "XDG_CONFIG_HOME" {
			return xdg
		}
		return ""
	}}
	if code := run(context.Background(), e, []string{"serve", "--config", config, "--no-cache"}); code != 0 {
		t.Fatalf("exit code %d\nstderr: %s", code, stderr.String())
	}
	log := stderr.String()
	for _, want := range []string{"server=notes", "toolbench login --config " + config, "server=gone"} {
		if !strings.Contains(log, want) {
			t.Errorf("stderr lacks %q:\n%s", want, log)
		}
	}
	if got := as.ASBearers(); len(got) != 0 {
		t.Errorf("the authorization server got bearer tokens: %d", len(got))
	}
	if c := as.Counts(); c.Registrations+c.Authorizations+c.CodeExchanges+c.Refreshes != 0 || c.Unauthorized == 0 {
		t.Errorf("counts %+v: want a 401 and no OAuth traffic without a login", c)
	}
}

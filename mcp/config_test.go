package mcp_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/toolsift/toolsift/mcp"
)

func loadString(t *testing.T, text string) (*mcp.Config, error) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return mcp.LoadConfig(file)
}

func TestLoadConfig(t *testing.T) {
	t.Setenv("TOOLSIFT_TOKEN", "s3cret")
	cfg, err := loadString(t, `{
	  "mcpServers": {
	    "files": {"command": "node", "args": ["node_modules/x/index.js", "."], "env": {"TOKEN": "${TOOLSIFT_TOKEN}", "MISSING": "a${TOOLSIFT_UNSET_VAR}b"}, "cwd": "work"},
	    "remote": {"url": "https://example.invalid/mcp", "headers": {"Authorization": "Bearer ${TOOLSIFT_TOKEN}", "X-Pass": "pa$$word $HOME"}, "type": "streamable-http", "timeout": 45},
	    "legacy": {"url": "http://127.0.0.1:9/sse", "transport": "sse", "timeout": "1m30s", "protocolVersion": "2024-11-05"},
	    "picky": {"command": "srv", "allowedTools": ["get_*"], "disabledTools": ["get_secret"], "disabled": true, "autoApprove": ["x"], "color": "red"}
	  },
	  "theme": "dark"
	}`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]mcp.ServerConfig{
		"files":  {Command: "node", Args: []string{"node_modules/x/index.js", "."}, Env: map[string]string{"TOKEN": "s3cret", "MISSING": "ab"}, Cwd: "work"},
		"remote": {URL: "https://example.invalid/mcp", Headers: map[string]string{"Authorization": "Bearer s3cret", "X-Pass": "pa$$word $HOME"}, Type: "http", Timeout: 45 * time.Second},
		"legacy": {URL: "http://127.0.0.1:9/sse", Type: "sse", Timeout: 90 * time.Second, ProtocolVersion: "2024-11-05"},
		"picky":  {Command: "srv", AllowedTools: []string{"get_*"}, DisabledTools: []string{"get_secret"}, Disabled: true},
	}
	if diff := cmp.Diff(want, cfg.Servers, cmpopts.IgnoreFields(mcp.ServerConfig{}, "Transport")); diff != "" {
		t.Errorf("Servers (-want +got):\n%s", diff)
	}
	wantWarnings := []string{
		`unknown top-level field "theme" ignored`,
		`server "files": env "MISSING": ${TOOLSIFT_UNSET_VAR} is not set`,
		`server "picky": unknown field "color" ignored`,
	}
	if diff := cmp.Diff(wantWarnings, cfg.Warnings, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("Warnings (-want +got):\n%s", diff)
	}
	if !filepath.IsAbs(cfg.Dir) {
		t.Errorf("Dir = %q, want the config file's absolute folder", cfg.Dir)
	}
}

func TestLoadConfigErrors(t *testing.T) {
	tests := []struct {
		name, text string
		mentions   []string
	}{
		{"not json", `{"mcpServers": `, []string{"mcp.json"}},
		{"no servers", `{"other": {}}`, []string{"mcpServers"}},
		{"servers not an object", `{"mcpServers": []}`, []string{"mcpServers"}},
		{"no command or url", `{"mcpServers": {"x": {"args": ["a"]}}}`, []string{`server "x"`, "command"}},
		{"both", `{"mcpServers": {"x": {"command": "a", "url": "http://h/"}}}`, []string{`server "x"`, "url"}},
		{"args not strings", `{"mcpServers": {"x": {"command": "a", "args": [1]}}}`, []string{`server "x"`, `"args"`}},
		{"bad url", `{"mcpServers": {"x": {"url": "ftp://h/"}}}`, []string{`server "x"`, `"url"`}},
		{"bad type", `{"mcpServers": {"x": {"url": "http://h/", "type": "websocket"}}}`, []string{`server "x"`, `"type"`}},
		{"bad timeout", `{"mcpServers": {"x": {"command": "a", "timeout": "soon"}}}`, []string{`server "x"`, `"timeout"`}},
		{"negative timeout", `{"mcpServers": {"x": {"command": "a", "timeout": -1}}}`, []string{`server "x"`, `"timeout"`}},
		{"bad glob", `{"mcpServers": {"x": {"command": "a", "allowedTools": ["[a"]}}}`, []string{`server "x"`, `"allowedTools"`}},
		{"bad protocol", `{"mcpServers": {"x": {"command": "a", "protocolVersion": "v2"}}}`, []string{`server "x"`, `"protocolVersion"`}},
		{"headers without url", `{"mcpServers": {"x": {"command": "a", "headers": {"a": "b"}}}}`, []string{`server "x"`, `"headers"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadString(t, tt.text)
			if !errors.Is(err, mcp.ErrConfig) {
				t.Fatalf("error = %v, want ErrConfig", err)
			}
			for _, m := range tt.mentions {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %s", err, m)
				}
			}
		})
	}
	if _, err := mcp.LoadConfig(filepath.Join(t.TempDir(), "missing.json")); !errors.Is(err, mcp.ErrConfig) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: error = %v, want ErrConfig wrapping ErrNotExist", err)
	}
}

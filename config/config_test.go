package config_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/toolsift/toolsift/config"
)

// load writes text to mcp.json in a fresh folder and loads it. In the error
// and warnings it returns, that file's path reads "mcp.json".
func load(t *testing.T, text string, opts *config.Options) (*config.Config, error) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(file, opts)
	if cfg != nil {
		for i, w := range cfg.Warnings {
			cfg.Warnings[i] = strings.ReplaceAll(w, file, "mcp.json")
		}
		for name, sc := range cfg.Servers {
			if sc.Err != nil {
				sc.Err = relErr{sc.Err, file}
				cfg.Servers[name] = sc
			}
		}
	}
	if err != nil {
		err = relErr{err, file}
	}
	return cfg, err
}

// relErr shows an error with file shortened to "mcp.json".
type relErr struct {
	err  error
	file string
}

func (e relErr) Error() string { return strings.ReplaceAll(e.err.Error(), e.file, "mcp.json") }
func (e relErr) Unwrap() error { return e.err }

// ignoreFuncs leaves out what cmp cannot compare; Err is checked apart.
var ignoreFuncs = cmpopts.IgnoreFields(config.Server{}, "Dial", "Err")

func TestLoadClaudeDesktop(t *testing.T) {
	t.Setenv("TOOLSIFT_TOKEN", "s3cret")
	cfg, err := load(t, `{
	  "mcpServers": {
	    "files": {"command": "node", "args": ["node_modules/x/index.js", "."], "env": {"TOKEN": "${TOOLSIFT_TOKEN}", "MISSING": "a${TOOLSIFT_UNSET_VAR}b${TOOLSIFT_UNSET_VAR}"}, "cwd": "work"},
	    "remote": {"url": "https://example.invalid/mcp", "headers": {"Authorization": "Bearer ${TOOLSIFT_TOKEN}", "X-Pass": "pa$$word $HOME"}, "type": "streamable-http", "timeout": 45},
	    "legacy": {"url": "http://127.0.0.1:9/sse", "transport": "sse", "timeout": "1m30s", "protocolVersion": "2024-11-05"},
	    "picky": {"command": "srv", "allowedTools": ["get_*"], "disabledTools": ["get_secret"], "disabled": true, "autoApprove": ["x"], "color": "red", "description": null},
	    "quiet": {"command": "srv", "args": null, "timeout": 0, "alwaysLoad": true, "alwaysLoadTools": ["get_*", "ping"]}
	  },
	  "theme": "dark"
	}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]config.Server{
		"files":  {Command: "node", Args: []string{"node_modules/x/index.js", "."}, Env: map[string]string{"TOKEN": "s3cret", "MISSING": "ab"}, Cwd: "work"},
		"remote": {URL: "https://example.invalid/mcp", Headers: map[string]string{"Authorization": "Bearer s3cret", "X-Pass": "pa$$word $HOME"}, Type: "http", Timeout: 45 * time.Second},
		"legacy": {URL: "http://127.0.0.1:9/sse", Type: "sse", Timeout: 90 * time.Second, ProtocolVersion: "2024-11-05"},
		"picky":  {Command: "srv", AllowedTools: []string{"get_*"}, DisabledTools: []string{"get_secret"}, Disabled: true},
		"quiet":  {Command: "srv", AlwaysLoad: true, AlwaysLoadTools: []string{"get_*", "ping"}},
	}
	if diff := cmp.Diff(want, cfg.Servers, ignoreFuncs); diff != "" {
		t.Errorf("Servers (-want +got):\n%s", diff)
	}
	// Once per server and field, in file order, where it happens.
	wantWarnings := []string{
		`mcp.json:3:126: server "files": env "MISSING": ${TOOLSIFT_UNSET_VAR} is not set`,
		`mcp.json:6:134: server "picky": unknown field "color" ignored`,
		`mcp.json:9:4: unknown top-level field "theme" ignored`,
	}
	if diff := cmp.Diff(wantWarnings, cfg.Warnings); diff != "" {
		t.Errorf("Warnings (-want +got):\n%s", diff)
	}
	if !filepath.IsAbs(cfg.Dir) {
		t.Errorf("Dir = %q, want the config file's absolute folder", cfg.Dir)
	}
}

// TestLoadGolden reads the files in testdata as each client
// writes them.
func TestLoadGolden(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("USERPROFILE", home)
	t.Setenv("TOOLSIFT_GOLDEN_TOKEN", "tok-123")
	t.Setenv("TOOLSIFT_GOLDEN_DSN", "postgres://db/app")
	t.Setenv("TOOLSIFT_GOLDEN_BIN", "") // empty: ${VAR:-default} takes the default
	for _, unset := range []string{"TOOLSIFT_GOLDEN_USER", "TOOLSIFT_GOLDEN_API"} {
		t.Setenv(unset, "")
		os.Unsetenv(unset)
	}
	abs := func(p string) string {
		t.Helper()
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	vscodeRoot := abs("testdata/vscode")
	tests := []struct {
		name     string
		file     string
		opts     *config.Options
		want     map[string]config.Server
		warnings []string
	}{{
		name: "vscode",
		file: "testdata/vscode/.vscode/mcp.json",
		opts: &config.Options{Inputs: map[string]string{"github-token": "ghp_s3cret"}},
		want: map[string]config.Server{
			"github": {
				Command: filepath.Join(vscodeRoot, "bin") + "/github-mcp",
				Args:    []string{"--region", "eu", "--home=" + home},
				Env: map[string]string{
					"GITHUB_TOKEN": "ghp_s3cret",
					"LOG_LEVEL":    "debug",
					"DOCS":         "http://example.com/a//b/*c*/",
					"RETRIES":      "3",
					"GITHUB_API":   "https://api.github.com",
					"GREETING":     "hello # not a comment",
					"MULTI":        "line1\nline2 \"quoted\"",
					"SPANS":        "first\nsecond",
					"EMPTY":        "",
					"SPACED":       "value with spaces",
				},
			},
			"remote": {URL: "https://api.example.com/mcp?region=eu", Type: "http", Headers: map[string]string{"Authorization": "Bearer tok-123"}},
			"events": {URL: "http://localhost:3001/sse", Type: "sse"},
			"cloud":  {Command: "cloud-mcp", InheritEnv: []string{"AWS_*", "KUBECONFIG"}},
		},
	}, {
		name: "vscode with a workspace folder",
		file: "testdata/vscode/.vscode/mcp.json",
		opts: &config.Options{Inputs: map[string]string{"github-token": "t", "region": "us"}, WorkspaceFolder: "/ws"},
		want: map[string]config.Server{
			"github": {
				Command: "/ws/bin/github-mcp",
				Args:    []string{"--region", "us", "--home=" + home},
				Env: map[string]string{
					"GITHUB_TOKEN": "t", "LOG_LEVEL": "debug", "DOCS": "http://example.com/a//b/*c*/", "RETRIES": "3",
					// "envFile" is relative to the config file, not the workspace.
					"GITHUB_API": "https://api.github.com", "GREETING": "hello # not a comment",
					"MULTI": "line1\nline2 \"quoted\"", "SPANS": "first\nsecond", "EMPTY": "", "SPACED": "value with spaces",
				},
			},
			"remote": {URL: "https://api.example.com/mcp?region=us", Type: "http", Headers: map[string]string{"Authorization": "Bearer tok-123"}},
			"events": {URL: "http://localhost:3001/sse", Type: "sse"},
			"cloud":  {Command: "cloud-mcp", InheritEnv: []string{"AWS_*", "KUBECONFIG"}},
		},
	}, {
		name: "claude code",
		file: "testdata/claude-code/.mcp.json",
		want: map[string]config.Server{
			"db": {
				Command: "npx",
				Args:    []string{"-y", "db-mcp", "--dsn", "postgres://db/app"},
				Env:     map[string]string{"DB_USER": "postgres", "DB_PASS": "tok-123"},
			},
			"api":    {URL: "https://api.example.com/mcp", Type: "http", Headers: map[string]string{"Authorization": "Bearer tok-123"}},
			"legacy": {URL: "https://sse.example.com/sse", Type: "sse"},
		},
	}, {
		name: "cursor",
		file: "testdata/cursor/.cursor/mcp.json",
		want: map[string]config.Server{
			"notes": {
				Command: "node",
				Args:    []string{filepath.Join(home, "mcp") + "/notes.js", abs("testdata/cursor")},
				Env:     map[string]string{"NOTES_TOKEN": "tok-123"},
			},
			"web": {URL: "https://mcp.example.com/sse", Headers: map[string]string{"X-Key": "tok-123"}},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Load(tt.file, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, cfg.Servers, ignoreFuncs); diff != "" {
				t.Errorf("Servers (-want +got):\n%s", diff)
			}
			for name, sc := range cfg.Servers {
				if sc.Err != nil {
					t.Errorf("server %s: Err = %v, want nil", name, sc.Err)
				}
			}
			if len(cfg.Warnings) > 0 {
				t.Errorf("Warnings = %q, want none", cfg.Warnings)
			}
			if want := abs(filepath.Dir(tt.file)); cfg.Dir != want {
				t.Errorf("Dir = %q, want %q", cfg.Dir, want)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name, text string
		want       string // after "config: invalid: "
	}{
		{"not json", `{"mcpServers": }`, `mcp.json:1:16: invalid character '}' looking for beginning of value`},
		{"truncated", "{\"mcpServers\": {\n", `mcp.json:2:1: unexpected end of file`},
		{"empty", ``, `mcp.json:1:1: unexpected end of file`},
		{"garbage after", "{\"mcpServers\": {}}\n}", `mcp.json:2:1: invalid character '}' after top-level value`},
		{"unterminated comment", "{\"mcpServers\": {}} /* open\n", `mcp.json:1:20: unterminated /* comment`},
		{"comma alone", `{"mcpServers": {"x": {"command": "a", "args": [,]}}}`, `mcp.json:1:48: invalid character ',' looking for beginning of value`},
		{"after a BOM", "\uFEFF{\n  \"mcpServers\": 3\n}", `mcp.json:2:17: field "mcpServers": want an object of servers, got number`},
		{"CRLF lines", "{\r\n\"mcpServers\": {\r\n\"x\": 1}}", `mcp.json:3:6: server "x": want an object, got number`},
		{"columns count characters", `{"mcpServers": {"é€": 1}}`, `mcp.json:1:23: server "é€": want an object, got number`},
		{"top not an object", `[]`, `mcp.json:1:1: want an object with "mcpServers" or "servers", got array`},
		{"no servers", `{}`, `mcp.json:1:1: no "mcpServers" or "servers" object`},
		{"no servers, another field", `{"other": {}}`, `mcp.json:1:2: no "mcpServers" or "servers" object; unknown top-level field "other"`},
		{"mcpServers misspelt", `{"mcpservers": {"x": {"command": "a"}}}`, `mcp.json:1:2: no "mcpServers" or "servers" object; unknown top-level field "mcpservers" (did you mean "mcpServers"?)`},
		{"command misspelt", "{\"mcpServers\": {\n  \"x\": {\"comand\": \"npx\", \"args\": [\"a\"]}}}", `mcp.json:2:9: server "x": needs "command" or "url"; unknown field "comand" (did you mean "command"?)`},
		{"url misspelt, and a field far from any", `{"mcpServers": {"x": {"colour": "red", "ulr": "http://h/"}}}`, `mcp.json:1:23: server "x": needs "command" or "url"; unknown field "colour", unknown field "ulr" (did you mean "url"?)`},
		{"url misspelt beside headers", `{"mcpServers": {"x": {"command": "a", "headers": {"a": "b"}, "URL": "http://h/"}}}`, `mcp.json:1:62: server "x": "headers" needs "url"; unknown field "URL" (did you mean "url"?)`},
		{"an alias of another client", `{"mcpServers": {"x": {"serverUrl": "http://h/"}}}`, `mcp.json:1:23: server "x": needs "command" or "url"; unknown field "serverUrl" (did you mean "url"?)`},
		{"fields other clients write are not named", `{"mcpServers": {"x": {"description": "d", "autoApprove": []}}}`, `mcp.json:1:17: server "x": needs "command" or "url"`},
		{"both spellings", "{\"mcpServers\": {},\n \"servers\": {}}", `mcp.json:2:2: both "mcpServers" and "servers": use one`},
		{"servers not an object", `{"mcpServers": []}`, `mcp.json:1:16: field "mcpServers": want an object of servers, got array`},
		{"duplicate top key", "{\"mcpServers\": {},\n \"mcpServers\": {}}", `mcp.json:2:2: duplicate key "mcpServers" (first on line 1)`},
		{"duplicate server", "{\"servers\": {\n \"a\": {\"command\": \"x\"},\n \"a\": {\"command\": \"y\"}}}", `mcp.json:3:2: field "servers": duplicate server "a" (first on line 2)`},
		{"duplicate field", "{\"servers\": {\"a\": {\"command\": \"x\",\n \"command\": \"y\"}}}", `mcp.json:2:2: server "a": duplicate field "command" (first on line 1)`},
		{"duplicate env", "{\"servers\": {\"a\": {\"command\": \"x\", \"env\": {\n\"K\": \"1\",\n\"K\": \"2\"}}}}", `mcp.json:3:1: server "a": field "env": duplicate key "K" (first on line 2)`},
		{"duplicate header", "{\"servers\": {\"a\": {\"url\": \"http://h/\", \"headers\": {\"A\": \"1\", \"A\": \"2\"}}}}", `mcp.json:1:62: server "a": field "headers": duplicate key "A" (first on line 1)`},
		{"server not an object", `{"mcpServers": {"x": "npx"}}`, `mcp.json:1:22: server "x": want an object, got string`},
		{"empty server name", `{"mcpServers": {"": {"command": "a"}}}`, `mcp.json:1:17: server with an empty name`},
		{"args not strings", "{\n \"mcpServers\": {\n  \"github\": {\n   \"command\": \"a\",\n   \"args\": [\"x\", 1]}}}", `mcp.json:5:18: server "github": field "args": want an array of strings, got number`},
		{"args not an array", `{"mcpServers": {"x": {"command": "a", "args": "-v"}}}`, `mcp.json:1:47: server "x": field "args": want an array of strings, got string`},
		{"command not a string", `{"mcpServers": {"x": {"command": ["a"]}}}`, `mcp.json:1:34: server "x": field "command": want a string, got array`},
		{"env value an object", `{"mcpServers": {"x": {"command": "a", "env": {"K": {}}}}}`, `mcp.json:1:52: server "x": field "env": key "K": want a string, got object`},
		{"header value a number", `{"mcpServers": {"x": {"url": "http://h/", "headers": {"K": 1}}}}`, `mcp.json:1:60: server "x": field "headers": key "K": want a string, got number`},
		{"disabled not a bool", `{"mcpServers": {"x": {"command": "a", "disabled": "yes"}}}`, `mcp.json:1:51: server "x": field "disabled": want true or false, got string`},
		{"inheritEnv a string", `{"mcpServers": {"x": {"command": "a", "inheritEnv": "PATH"}}}`, `mcp.json:1:53: server "x": field "inheritEnv": want true, false or an array of names, got string`},
		{"inheritEnv bad glob", `{"mcpServers": {"x": {"command": "a", "inheritEnv": ["AWS_[" ]}}}`, `mcp.json:1:54: server "x": field "inheritEnv": bad pattern "AWS_[": syntax error in pattern`},
		{"no command or url", "{\"mcpServers\": {\n  \"x\": {\"args\": [\"a\"]}}}", `mcp.json:2:3: server "x": needs "command" or "url"`},
		{"both command and url", `{"mcpServers": {"x": {"command": "a", "url": "http://h/"}}}`, `mcp.json:1:17: server "x": has more than one of "command", "url" and a Dial`},
		{"bad url", `{"mcpServers": {"x": {"url": "ftp://user:pw@h/"}}}`, `mcp.json:1:30: server "x": field "url": want an http or https URL`},
		{"bad type", `{"mcpServers": {"x": {"url": "http://h/", "type": "websocket"}}}`, `mcp.json:1:51: server "x": field "type": unknown transport "websocket" (want stdio, http or sse)`},
		{"type needs url", `{"mcpServers": {"x": {"command": "a", "type": "sse"}}}`, `mcp.json:1:17: server "x": field "type": "sse" needs "url"`},
		{"bad glob", `{"mcpServers": {"x": {"command": "a", "allowedTools": ["[a"]}}}`, `mcp.json:1:56: server "x": field "allowedTools": bad pattern "[a": syntax error in pattern`},
		{"alwaysLoadTools bad glob", `{"mcpServers": {"x": {"command": "a", "alwaysLoadTools": ["[a"]}}}`, `mcp.json:1:59: server "x": field "alwaysLoadTools": bad pattern "[a": syntax error in pattern`},
		{"bad protocol", `{"mcpServers": {"x": {"command": "a", "protocolVersion": "v2"}}}`, `mcp.json:1:58: server "x": field "protocolVersion": "v2" is not a YYYY-MM-DD revision`},
		{"headers without url", `{"mcpServers": {"x": {"command": "a", "headers": {"a": "b"}}}}`, `mcp.json:1:17: server "x": "headers" needs "url"`},
		{"inputs not an array", `{"inputs": {}, "servers": {}}`, `mcp.json:1:12: field "inputs": want an array of objects, got object`},
		{"input without id", `{"inputs": [{"type": "promptString"}], "servers": {}}`, `mcp.json:1:13: field "inputs": element 1: no "id"`},
		{"input with an empty id", `{"inputs": [{"id": ""}], "servers": {}}`, `mcp.json:1:20: field "inputs": element 1: field "id": want a non-empty string, got an empty string`},
		{"duplicate input", "{\"inputs\": [{\"id\": \"t\"},\n {\"id\": \"t\"}], \"servers\": {}}", `mcp.json:2:9: input "t": duplicate id (first on line 1)`},
		{"input default a number", `{"inputs": [{"id": "t", "default": 1}], "servers": {}}`, `mcp.json:1:36: input "t": field "default": want a string, got number`},
		{"input option a number", `{"inputs": [{"id": "t", "options": ["a", 2]}], "servers": {}}`, `mcp.json:1:42: input "t": field "options": want strings or {label, value} objects, got number`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load(t, tt.text, nil)
			if !errors.Is(err, config.ErrInvalid) {
				t.Fatalf("error = %v, want ErrInvalid", err)
			}
			if got, want := err.Error(), "config: invalid: "+tt.want; got != want {
				t.Errorf("error:\n got %s\nwant %s", got, want)
			}
		})
	}
	if _, err := config.Load(filepath.Join(t.TempDir(), "missing.json"), nil); !errors.Is(err, config.ErrInvalid) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: error = %v, want ErrInvalid wrapping ErrNotExist", err)
	}
}

func TestLoadTimeout(t *testing.T) {
	tests := []struct {
		value string
		want  time.Duration
		err   string // after `server "x": field "timeout": `
	}{
		{`45`, 45 * time.Second, ""},
		{`0.5`, 500 * time.Millisecond, ""},
		{`"45s"`, 45 * time.Second, ""},
		{`"2m"`, 2 * time.Minute, ""},
		{`"30"`, 30 * time.Second, ""},
		{`0`, 0, ""},
		{`-1`, 0, "timeout -1 seconds must not be negative"},
		{`"-5s"`, 0, `timeout "-5s" must not be negative`},
		{`1e300`, 0, "timeout 1e300 seconds is too large (max 9223372036 seconds)"},
		{`1e400`, 0, "timeout 1e400 seconds is too large (max 9223372036 seconds)"},
		{`9223372037`, 0, "timeout 9223372037 seconds is too large (max 9223372036 seconds)"},
		{`"1e300"`, 0, `timeout "1e300" is too large (max 9223372036 seconds)`},
		{`"3000000h"`, 0, `timeout "3000000h" is too large (max 9223372036 seconds)`},
		{`"NaN"`, 0, `timeout "NaN" is not a number`},
		{`"Inf"`, 0, `timeout "Inf" is too large (max 9223372036 seconds)`},
		{`"soon"`, 0, `want seconds or a duration ("45s"), got "soon"`},
		{`true`, 0, `want seconds or a duration ("45s"), got boolean`},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			cfg, err := load(t, `{"mcpServers": {"x": {"command": "a", "timeout": `+tt.value+`}}}`, nil)
			if tt.err != "" {
				want := `config: invalid: mcp.json:1:50: server "x": field "timeout": ` + tt.err
				if err == nil || err.Error() != want {
					t.Errorf("error:\n got %v\nwant %s", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Servers["x"].Timeout; got != tt.want {
				t.Errorf("Timeout = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestLoadVariables(t *testing.T) {
	t.Setenv("TOOLSIFT_A", "a")
	t.Setenv("TOOLSIFT_EMPTY", "")
	os.Unsetenv("TOOLSIFT_UNSET")
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("USERPROFILE", home)
	sep := string(filepath.Separator)
	tests := []struct {
		value    string
		want     string
		warnings []string
	}{
		{"${TOOLSIFT_A}", "a", nil},
		{"${env:TOOLSIFT_A}", "a", nil},
		{"x${TOOLSIFT_A}y${TOOLSIFT_A}", "xaya", nil},
		{"${TOOLSIFT_A:-d}", "a", nil},
		{"${TOOLSIFT_UNSET:-d e}", "d e", nil},
		{"${TOOLSIFT_EMPTY:-d}", "d", nil},
		{"${TOOLSIFT_EMPTY}", "", nil},
		{"${TOOLSIFT_UNSET}", "", []string{`mcp.json:1:48: server "x": field "args": ${TOOLSIFT_UNSET} is not set`}},
		{"${env:TOOLSIFT_UNSET}", "", []string{`mcp.json:1:48: server "x": field "args": ${env:TOOLSIFT_UNSET} is not set`}},
		{"${userHome}", home, nil},
		{"a${pathSeparator}b${/}c", "a" + sep + "b" + sep + "c", nil},
		{"${workspaceFolderBasename}", "ws", nil},
		{"$HOME $ {A} $$", "$HOME $ {A} $$", nil},
		{"${command:pick}", "${command:pick}", []string{`mcp.json:1:48: server "x": field "args": unsupported variable ${command:pick} left as written`}},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			cfg, err := load(t, `{"mcpServers": {"x": {"command": "a", "args": ["`+tt.value+`"]}}}`, &config.Options{WorkspaceFolder: filepath.Join(home, "ws")})
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Servers["x"].Args[0]; got != tt.want {
				t.Errorf("expanded to %q, want %q", got, tt.want)
			}
			if diff := cmp.Diff(tt.warnings, cfg.Warnings); diff != "" {
				t.Errorf("Warnings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLoadWorkspaceFolder checks the default of ${workspaceFolder}.
func TestLoadWorkspaceFolder(t *testing.T) {
	root := t.TempDir()
	for _, tt := range []struct{ dir, want string }{
		{".vscode", root},
		{".cursor", root},
		{"", root},
		{"conf", filepath.Join(root, "conf")},
	} {
		dir := filepath.Join(root, tt.dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(dir, "mcp.json")
		if err := os.WriteFile(file, []byte(`{"servers": {"x": {"command": "${workspaceFolder}"}}}`), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(file, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.Servers["x"].Command; got != tt.want {
			t.Errorf("%s: ${workspaceFolder} = %q, want %q", tt.dir, got, tt.want)
		}
	}
}

const secret = "hunter2-TOOLSIFT"

// TestLoadInputs checks ${input:ID}: values from Options, then
// defaults; a server needing a missing one is unusable, the rest load; and
// no value ever shows in an error, warning or String.
func TestLoadInputs(t *testing.T) {
	text := `{
  "inputs": [
    {"type": "promptString", "id": "token", "description": "API token", "password": true},
    {"type": "promptString", "id": "key", "password": true},
    {"type": "pickString", "id": "env", "options": ["prod", "dev"], "default": "dev"},
    {"type": "command", "id": "cmd", "command": "x.y"}
  ],
  "servers": {
    "api": {"url": "https://h/mcp/${input:token}", "headers": {"Authorization": "Bearer ${input:token}"}, "args2": 1},
    "cli": {"command": "cli", "args": ["--key=${input:key}", "--env", "${input:env}", "${UNSET_TOOLSIFT_X}"], "env": {"KEY": "${input:key}"}},
    "undeclared": {"command": "x", "env": {"V": "${input:nowhere}"}},
    "off": {"url": "${input:key}", "disabled": true},
    "plain": {"command": "plain"}
  }
}`
	os.Unsetenv("UNSET_TOOLSIFT_X")
	cfg, err := load(t, text, &config.Options{Inputs: map[string]string{"token": secret}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]config.Server{
		"api":        {URL: "https://h/mcp/" + secret, Headers: map[string]string{"Authorization": "Bearer " + secret}},
		"cli":        {Command: "cli", Args: []string{"--key=${input:key}", "--env", "dev", ""}, Env: map[string]string{"KEY": "${input:key}"}},
		"undeclared": {Command: "x", Env: map[string]string{"V": "${input:nowhere}"}},
		"off":        {URL: "${input:key}", Disabled: true},
		"plain":      {Command: "plain"},
	}
	if diff := cmp.Diff(want, cfg.Servers, ignoreFuncs); diff != "" {
		t.Errorf("Servers (-want +got):\n%s", diff)
	}
	wantErr := map[string]string{
		"cli":        `config: invalid: mcp.json:10:40: server "cli": field "args": input "key" has no value and no default (set Options.Inputs["key"])`,
		"undeclared": `config: invalid: mcp.json:11:49: server "undeclared": env "V": input "nowhere" is not in "inputs" and has no value (set Options.Inputs["nowhere"])`,
		"off":        `config: invalid: mcp.json:12:20: server "off": field "url": input "key" has no value and no default (set Options.Inputs["key"])`,
	}
	for name, sc := range cfg.Servers {
		got := ""
		if sc.Err != nil {
			got = sc.Err.Error()
			if !errors.Is(sc.Err, config.ErrInvalid) {
				t.Errorf("%s: Err does not wrap ErrInvalid", name)
			}
			if ie, ok := errors.AsType[*config.InputError](sc.Err); !ok || !strings.Contains(wantErr[name], fmt.Sprintf("input %q", ie.ID)) {
				t.Errorf("%s: Err is not an InputError naming its input: %#v", name, sc.Err)
			}
		}
		if got != wantErr[name] {
			t.Errorf("%s: Err:\n got %s\nwant %s", name, got, wantErr[name])
		}
	}
	wantWarnings := []string{
		`mcp.json:6:14: input "cmd": field "type": type "command" is not supported; the value comes from Options.Inputs`,
		`mcp.json:6:38: input "cmd": unknown field "command" ignored`,
		`mcp.json:9:107: server "api": unknown field "args2" ignored (did you mean "args"?)`,
		`mcp.json:10:87: server "cli": field "args": ${UNSET_TOOLSIFT_X} is not set`,
	}
	if diff := cmp.Diff(wantWarnings, cfg.Warnings); diff != "" {
		t.Errorf("Warnings (-want +got):\n%s", diff)
	}

	// The config is valid as it is: unusable servers are the Hub's to
	// report (upstream's TestHubUnusableServers).
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}

	// The secret must not leak into anything meant for people.
	var shown []string
	shown = append(shown, cfg.Warnings...)
	for _, sc := range cfg.Servers {
		shown = append(shown, sc.String(), fmt.Sprint(sc), fmt.Sprintf("%v %+v", sc, sc))
		if sc.Err != nil {
			shown = append(shown, sc.Err.Error())
		}
	}
	// Nor into errors about fields that hold it.
	for _, bad := range []string{
		`{"inputs": [{"id": "u"}], "servers": {"x": {"url": "${input:u}"}}}`,
		`{"inputs": [{"id": "u"}], "servers": {"x": {"url": "http://[${input:u}"}}}`,
		`{"inputs": [{"id": "u"}], "servers": {"x": {"command": "a", "envFile": "/nonexistent/${input:u}/.env"}}}`,
	} {
		cfg, err := load(t, bad, &config.Options{Inputs: map[string]string{"u": secret + ":x"}})
		switch {
		case err != nil:
			shown = append(shown, err.Error())
		case cfg.Servers["x"].Err != nil:
			shown = append(shown, cfg.Servers["x"].Err.Error())
		default:
			t.Errorf("%s: no error", bad)
		}
	}
	for _, s := range shown {
		if strings.Contains(s, secret) {
			t.Errorf("the input's value shows in %q", s)
		}
	}
}

func TestLoadEnvFile(t *testing.T) {
	tests := []struct {
		name, env string
		want      map[string]string
		err       string // Err after `...: server "x": field "envFile": `
	}{
		{"plain", "A=1\nB = two words \n", map[string]string{"A": "1", "B": "two words", "C": "config"}, ""},
		{"export and comments", "# c\n\nexport A=1 # note\n  export\tB=x#y\n", map[string]string{"A": "1", "B": "x#y", "C": "config"}, ""},
		{"quotes", `A="a \"b\" \n c"` + "\nB='a \\n $X # c'\nD=\"\" # empty\n", map[string]string{"A": "a \"b\" \n c", "B": `a \n $X # c`, "D": "", "C": "config"}, ""},
		{"CRLF and BOM", "\uFEFFA=1\r\nB=2\r\n", map[string]string{"A": "1", "B": "2", "C": "config"}, ""},
		{"env wins", "C=file\nD=file\n", map[string]string{"C": "config", "D": "file"}, ""},
		{"later wins", "A=1\nA=2\n", map[string]string{"A": "2", "C": "config"}, ""},
		{"no equals", "A=1\nJUSTTEXT\n", nil, "line 2: want KEY=VALUE"},
		{"bad key", "1A=x\n", nil, "line 1: want KEY=VALUE"},
		{"unterminated", "A=1\nB=\"open\nstill\n", nil, "line 2: unterminated quoted value"},
		{"text after quote", "A='x' y\n", nil, "line 1: unexpected text after the closing quote"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "vars.env"), []byte(tt.env), 0o600); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(dir, "mcp.json")
			text := `{"servers": {"x": {"command": "a", "env": {"C": "config"}, "envFile": "vars.env"}, "y": {"command": "b"}}}`
			if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Load(file, nil)
			if err != nil {
				t.Fatal(err)
			}
			x := cfg.Servers["x"]
			if tt.err != "" {
				want := fmt.Sprintf(`config: invalid: %s:1:71: server "x": field "envFile": %s`, file, tt.err)
				if x.Err == nil || x.Err.Error() != want {
					t.Errorf("Err:\n got %v\nwant %s", x.Err, want)
				}
				if cfg.Servers["y"].Err != nil {
					t.Errorf("server y: Err = %v, want nil", cfg.Servers["y"].Err)
				}
				return
			}
			if x.Err != nil {
				t.Fatal(x.Err)
			}
			if diff := cmp.Diff(tt.want, x.Env); diff != "" {
				t.Errorf("Env (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("missing", func(t *testing.T) {
		cfg, err := load(t, `{"servers": {"x": {"command": "a", "envFile": "nope.env"}}}`, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := `config: invalid: mcp.json:1:47: server "x": field "envFile": cannot read it: no such file or directory`
		if err := cfg.Servers["x"].Err; err == nil || err.Error() != want {
			t.Errorf("Err:\n got %v\nwant %s", err, want)
		}
	})
}

func TestServerString(t *testing.T) {
	for _, tt := range []struct {
		sc   config.Server
		want string
	}{
		{config.Server{Command: "npx", Args: []string{"-y", "pkg", "--token=" + secret}, Env: map[string]string{"B": secret, "A": "x"}}, `stdio "npx" with 3 args, env A B`},
		{config.Server{URL: "https://u:" + secret + "@api.example.com/p/" + secret + "?k=" + secret, Headers: map[string]string{"Authorization": secret}, Type: "http"}, `http https://api.example.com, headers Authorization`},
		{config.Server{URL: "http://h/sse", Disabled: true}, `http or sse http://h, disabled`},
		{config.Server{Command: "x", Err: errors.New("no input")}, `stdio "x", unusable: no input`},
		{config.Server{}, `no transport`},
	} {
		if got := tt.sc.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

// TestLoadNoServers: a file without a server loads (a config being written
// is not an error), with a warning that names the file, where the servers
// go, and what follows.
func TestLoadNoServers(t *testing.T) {
	for text, want := range map[string]string{
		`{"mcpServers": {}}`:         `mcp.json:1:16: field "mcpServers": no servers: there are no tools to offer`,
		"{\n  \"servers\": { }\n}\n": `mcp.json:2:14: field "servers": no servers: there are no tools to offer`,
	} {
		cfg, err := load(t, text, nil)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{want}, cfg.Warnings); diff != "" {
			t.Errorf("%s: Warnings (-want +got):\n%s", text, diff)
		}
	}
}

// TestLoadUnknownFields: an unknown field of a usable entry is a warning
// naming it, with the known field it is probably a misspelling of; the
// fields other clients write that toolsift ignores stay silent, and the
// entry loads as if the unknown field were absent.
func TestLoadUnknownFields(t *testing.T) {
	for _, tt := range []struct {
		name, text string
		warnings   []string
	}{
		{"transposed letters", `{"mcpServers": {"x": {"command": "a", "tiemout": 5}}}`,
			[]string{`mcp.json:1:39: server "x": unknown field "tiemout" ignored (did you mean "timeout"?)`}},
		{"one letter short", `{"mcpServers": {"x": {"command": "a", "disable": true}}}`,
			[]string{`mcp.json:1:39: server "x": unknown field "disable" ignored (did you mean "disabled"?)`}},
		{"case and underscores", `{"mcpServers": {"x": {"command": "a", "Allowed_Tools": ["get_*"], "ARGS": ["-v"]}}}`,
			[]string{
				`mcp.json:1:39: server "x": unknown field "Allowed_Tools" ignored (did you mean "allowedTools"?)`,
				`mcp.json:1:67: server "x": unknown field "ARGS" ignored (did you mean "args"?)`,
			}},
		{"an alias of another client", `{"mcpServers": {"x": {"command": "a", "includeTools": ["get_*"]}}}`,
			[]string{`mcp.json:1:39: server "x": unknown field "includeTools" ignored (did you mean "allowedTools"?)`}},
		{"far from every field", `{"mcpServers": {"x": {"command": "a", "color": "red"}}}`,
			[]string{`mcp.json:1:39: server "x": unknown field "color" ignored`}},
		{"fields other clients write", `{"mcpServers": {"x": {"command": "a", "autoApprove": [], "alwaysAllow": [], "description": "d", "dev": {}, "gallery": true}}}`,
			nil},
		{"top level", `{"mcpServer": {}, "mcpServers": {"x": {"command": "a"}}, "input": []}`,
			[]string{
				`mcp.json:1:2: unknown top-level field "mcpServer" ignored (did you mean "mcpServers"?)`,
				`mcp.json:1:58: unknown top-level field "input" ignored (did you mean "inputs"?)`,
			}},
		{"an input", `{"inputs": [{"id": "k", "defualt": "v"}], "mcpServers": {"x": {"command": "a"}}}`,
			[]string{`mcp.json:1:25: input "k": unknown field "defualt" ignored (did you mean "default"?)`}},
		{"oauth", `{"mcpServers": {"x": {"url": "https://h/", "oauth": {"clientID": "c", "scope": "read"}}}}`,
			[]string{
				`mcp.json:1:54: server "x": field "oauth": unknown field "clientID" ignored (did you mean "clientId"?)`,
				`mcp.json:1:71: server "x": field "oauth": unknown field "scope" ignored (did you mean "scopes"?)`,
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := load(t, tt.text, nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.warnings, cfg.Warnings); diff != "" {
				t.Errorf("Warnings (-want +got):\n%s", diff)
			}
			if sc := cfg.Servers["x"]; sc.Command != "a" && sc.URL == "" || sc.Timeout != 0 || sc.Disabled || sc.AllowedTools != nil || sc.Args != nil {
				t.Errorf("server x = %+v, want the unknown fields ignored", sc)
			}
		})
	}
}

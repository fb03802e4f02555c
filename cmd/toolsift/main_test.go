package main

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsift/toolsift/cmd/internal/cli"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/pgtest"
	"github.com/toolsift/toolsift/store"
)

func TestUsage(t *testing.T) {
	config := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(config, []byte(`{"mcpServers":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	badPolicy := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(badPolicy, []byte("{\"rules\": [\n  {\"teams\": [\"a\"], \"alow\": [\"x\"]}]}"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A store whose server answers but has no such role.
	ghost, err := url.Parse(pgtest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	ghost.User = url.User("ghost")
	ghostStore := ghost.String()
	tests := []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{nil, 2, "", "toolsift serve --config FILE"},
		{[]string{"help"}, 0, "toolsift serve --config FILE", ""},
		{[]string{"frobnicate"}, 2, "", `unknown command "frobnicate"`},
		{[]string{"--version"}, 0, "toolsift " + cli.Version() + "\n", ""},
		{[]string{"version"}, 0, "toolsift " + cli.Version() + "\n", ""},
		{[]string{"serve", "--config", config, "--session-timeout", "-1s"}, 2, "", "--session-timeout -1s: want 0 (never) or a positive duration"},
		{[]string{"serve", "--config", config, "--budget", "-5"}, 2, "", "toolsift serve: --budget -5: want a positive number of tokens"},
		{[]string{"serve", "-h"}, 0, "", "alwaysLoad"},
		{[]string{"serve"}, 2, "", "--config is required"},
		{[]string{"serve", "--config"}, 2, "", "--config needs a value"},
		{[]string{"serve", "--config", config, "--bogus"}, 2, "", "unknown flag --bogus"},
		{[]string{"serve", "--config", config, "--max-tools", "x"}, 2, "", `--max-tools: "x" is not a whole number`},
		{[]string{"serve", "--config", config, "--max-tools", "2"}, 2, "", "want at least 3"},
		{[]string{"serve", "--config", config, "--idle-timeout", "soon"}, 2, "", "is not a duration"},
		{[]string{"serve", "--config", config, "extra"}, 2, "", `unexpected argument "extra"`},
		{[]string{"serve", "--config", config, "--stateless"}, 2, "", "need --listen"},
		{[]string{"serve", "--config", config, "--listen", "127.0.0.1:8080", "--metrics", "127.0.0.1:8080"}, 2, "", "--metrics 127.0.0.1:8080: the --listen address"},
		{[]string{"serve", "--config", config, "--learn-scope", "teams"}, 2, "", `--learn-scope "teams": want team, user or global`},
		{[]string{"serve", "--config", config, "--metrics-user-labels", "5"}, 2, "", "--metrics-user-labels needs --metrics"},
		{[]string{"serve", "--config", config, "--metrics", "127.0.0.1:0", "--metrics-user-labels", "-1"}, 2, "", "--metrics-user-labels -1: want 0 (no user labels) or more"},
		{[]string{"serve", "--config", config, "--no-cache", "--metrics", "9464"}, 1, "", "--metrics 9464: listen tcp: address 9464: missing port in address"},
		{[]string{"serve", "--config", config, "--listen", "8080"}, 2, "", "want host:port"},
		{[]string{"serve", "--config", config, "--listen", ":8080"}, 2, "", "accepts connections from other machines"},
		{[]string{"serve", "--config", config, "--listen", "0.0.0.0:8080"}, 2, "", "TOOLSIFT_SERVE_TOKEN"},
		{[]string{"serve", "--config", config, "--listen", "127.0.0.1:0", "--token-file", empty}, 1, "", "is empty"},
		{[]string{"serve", "--config", config, "--log-level", "loud"}, 2, "", "--log-level"},
		{[]string{"serve", "--config", config, "--max-conns-per-host", "1"}, 2, "", "--max-conns-per-host 1: want 0 (a quarter of --max-conns) or at least 2"},
		{[]string{"serve", "--config", config, "--max-conns-per-host", "-3"}, 2, "", "--max-conns-per-host -3: want 0"},
		{[]string{"serve", "--config", filepath.Join(t.TempDir(), "nope.json")}, 1, "", "nope.json"},
		{[]string{"serve", "--config", config, "--store", "postgres://app:s3cr3t@127.0.0.1:1/toolsift?connect_timeout=5"}, 1, "", "127.0.0.1:1/toolsift"},
		{[]string{"serve", "--config", config, "--store", ghostStore}, 1, "", `postgres: server refused: ` + ghostStore + `: failed to connect to ` + "`user=ghost"},
		{[]string{"serve", "--config", config, "--store", ghostStore}, 1, "", `role "ghost" does not exist (SQLSTATE 28000): create the role as a superuser (sudo -u postgres psql): CREATE ROLE ghost LOGIN PASSWORD '…'`},
		{[]string{"serve", "--config", config, "--store", "/dev/null"}, 2, "", "--store /dev/null: store: cachefile: refused /dev/null: not a folder"},
		{[]string{"serve", "--config", config, "--store", t.TempDir(), "--no-cache"}, 2, "", "--no-cache and --store"},
		{[]string{"serve", "--config", config, "--store", "/a", "--cache-dir", "/b"}, 2, "", "--cache-dir /b and --store /a: give --store only"},
		{[]string{"serve", "--config", config, "--policy", badPolicy}, 1, "", badPolicy + `:2:20: rule 1: unknown field "alow"`},
		{[]string{"serve", "--config", config, "--policy", filepath.Join(t.TempDir(), "nope.json")}, 1, "", "policy: open"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr strings.Builder
			e := &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, getenv: func(string) string { return "" }}
			if code := run(context.Background(), e, tt.args); code != tt.code {
				t.Errorf("exit code %d, want %d\nstderr: %s", code, tt.code, stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.stdout) {
				t.Errorf("stdout %q, want it to contain %q", stdout.String(), tt.stdout)
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr %q, want it to contain %q", stderr.String(), tt.stderr)
			}
			if strings.Contains(stderr.String(), "s3cr3t") {
				t.Errorf("stderr shows the store URL's password: %s", stderr.String())
			}
		})
	}
}

func TestIsSelf(t *testing.T) {
	tests := []struct {
		sc   config.Server
		want bool
	}{
		{config.Server{Command: "toolsift", Args: []string{"serve", "--config", "x.json"}}, true},
		{config.Server{Command: "/home/me/go/bin/toolsift", Args: []string{"serve"}}, true},
		{config.Server{Command: "go", Args: []string{"run", "./cmd/toolsift", "serve"}}, true},
		{config.Server{Command: "go", Args: []string{"run", "github.com/toolsift/toolsift/cmd/toolsift@latest", "serve"}}, true},
		{config.Server{Command: "go", Args: []string{"run", "./cmd/other", "serve"}}, false},
		{config.Server{Command: "toolsift-other", Args: []string{"serve"}}, false},
		{config.Server{Command: "node", Args: []string{"serve"}}, false},
	}
	for _, tt := range tests {
		if got := isSelf(tt.sc); got != tt.want {
			t.Errorf("isSelf(%s %v) = %v, want %v", tt.sc.Command, tt.sc.Args, got, tt.want)
		}
	}
}

// TestServeWarnings: serve reads "alwaysLoad" and --pin, warns about pins
// that match nothing and about an entry for itself, and ends when stdin
// does (which also warms the cache).
func TestServeWarnings(t *testing.T) {
	config := filepath.Join(t.TempDir(), ".mcp.json")
	if err := os.WriteFile(config, []byte(`{"mcpServers": {
		"gone": {"command": "/nonexistent/toolsift-test-server", "alwaysLoad": true},
		"toolsift": {"command": "toolsift", "args": ["serve", "--config", ".mcp.json"]}
	}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	e := &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, getenv: func(string) string { return "" }}
	if code := run(context.Background(), e, []string{"serve", "--config", config, "--pin", "nothing__here", "--no-cache"}); code != 0 {
		t.Fatalf("exit code %d\nstderr: %s", code, stderr.String())
	}
	for _, want := range []string{
		`server \"toolsift\" is toolsift serve itself: skipped`,
		`alwaysLoad server \"gone\" has no tools`,
		`pinned tool \"nothing__here\" matches no tool`,
		"msg=ready servers=2",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %s:\n%s", want, stderr.String())
		}
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout (the protocol's) = %q, want nothing", stdout.String())
	}
}

// TestServePolicy: serve reads --policy at start and warns of a pattern
// that names no server of the config, naming where it is written.
func TestServePolicy(t *testing.T) {
	dir := t.TempDir()
	config, policy := filepath.Join(dir, "mcp.json"), filepath.Join(dir, "policy.json")
	if err := os.WriteFile(config, []byte(`{"mcpServers": {"gone": {"command": "/nonexistent/toolsift-test-server"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(policy, []byte("{\n  // ops sees gone\n  \"rules\": [{\"teams\": [\"ops\"], \"allow\": [\"gone\", \"gnoe__*\"]}]\n}"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	e := &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, getenv: func(string) string { return "" }}
	if code := run(context.Background(), e, []string{"serve", "--config", config, "--policy", policy, "--no-cache"}); code != 0 {
		t.Fatalf("exit code %d\nstderr: %s", code, stderr.String())
	}
	if want := policy + `:3:13: rule 1: pattern \"gnoe__*\" names no server of the config`; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr lacks %s:\n%s", want, stderr.String())
	}
	if strings.Contains(stderr.String(), `pattern \"gone\"`) {
		t.Errorf("a pattern naming a server of the config is warned of:\n%s", stderr.String())
	}
}

// TestServeEmptyConfig: a config without servers is served (a config
// being written is not an error), with a warning naming the file.
func TestServeEmptyConfig(t *testing.T) {
	config := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(config, []byte(`{"mcpServers": {}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	e := &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, getenv: func(string) string { return "" }}
	if code := run(context.Background(), e, []string{"serve", "--config", config, "--no-cache"}); code != 0 {
		t.Fatalf("exit code %d\nstderr: %s", code, stderr.String())
	}
	if want := config + `:1:16: field \"mcpServers\": no servers: there are no tools to offer`; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr lacks %s:\n%s", want, stderr.String())
	}
}

// storeIn is the store.Dir in folder dir, or nil (the default folder)
// when dir is "".
func storeIn(tb testing.TB, dir string) store.Store {
	tb.Helper()
	if dir == "" {
		return nil
	}
	d, err := store.NewDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/toolsift/toolsift/cmd/internal/cli"
)

// runToolbench runs toolbench in-process with an empty environment and
// returns its exit code and output.
func runToolbench(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runWithEnv(t, nil, args...)
}

// runWithEnv runs toolbench in-process with the given environment.
func runWithEnv(t *testing.T, environ map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdout: &out, stderr: &errb, getenv: func(k string) string { return environ[k] }}
	code = run(context.Background(), e, args)
	return code, out.String(), errb.String()
}

// TestFlagErrors: a bad value is refused before any work (the config named
// does not exist, and no server or tokenizer is started), worded as every
// command words it, with exit code 2.
func TestFlagErrors(t *testing.T) {
	const cfg = "/nonexistent/mcp.json"
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--config", cfg, "--budget", "-5", "task"}, "toolbench run: --budget -5: want a positive number of tokens\n"},
		{[]string{"run", "--config", cfg, "--k", "0", "task"}, "toolbench run: --k 0: want a positive number of tools\n"},
		{[]string{"run", "--config", cfg, "--max-steps", "0", "task"}, "toolbench run: --max-steps 0: want a positive number of steps\n"},
		{[]string{"run", "--config", cfg, "--observation-budget", "-1", "task"}, "toolbench run: --observation-budget -1: want a positive number of tokens\n"},
		{[]string{"run", "--config", cfg, "--tool-timeout", "0s", "task"}, "toolbench run: --tool-timeout 0s: want a positive duration\n"},
		{[]string{"run", "--config", cfg, "--timeout", "-1s", "task"}, "toolbench run: --timeout -1s: want a positive duration\n"},
		{[]string{"explain", "--config", cfg, "--budget", "-5", "read a file"}, "toolbench explain: --budget -5: want a positive number of tokens\n"},
		{[]string{"explain", "--config", cfg, "--timeout", "0s", "read a file"}, "toolbench explain: --timeout 0s: want a positive duration\n"},
		{[]string{"eval", "--budget", "-5"}, "toolbench eval: --budget -5: want a positive number of tokens\n"},
		{[]string{"replay", "--tools", "t.jsonl"}, "toolbench replay: --tools and --queries are required\n"},
		{[]string{"replay", "--tools", "t.jsonl", "--queries", "q.jsonl", "--history", "1.5"}, "toolbench replay: --history 1.5: want a fraction from 0 to 1\n"},
		{[]string{"replay", "--tools", "t.jsonl", "--queries", "q.jsonl", "--noise", "-0.1"}, "toolbench replay: --noise -0.1: want a fraction from 0 to 1\n"},
		{[]string{"replay", "--tools", "t.jsonl", "--queries", "q.jsonl", "--identities", "0"}, "toolbench replay: --identities 0: want at least 1\n"},
		{[]string{"replay", "--tools", "t.jsonl", "--queries", "q.jsonl", "--seed", "-1"}, "toolbench replay: --seed -1: want 0 or a positive number\n"},
		{[]string{"list", "--config", cfg, "--timeout", "0s"}, "toolbench list: --timeout 0s: want a positive duration\n"},
		{[]string{"tokens", "--config", cfg, "--timeout", "-1s"}, "toolbench tokens: --timeout -1s: want a positive duration\n"},
		{[]string{"trust", "--config", cfg, "--timeout", "0s", "server"}, "toolbench trust: --timeout 0s: want a positive duration\n"},
		{[]string{"login", "--config", cfg, "--timeout", "0s"}, "toolbench login: --timeout 0s: want a positive duration\n"},
		{[]string{"list", "--config", cfg, "--store", "/tmp/a", "--no-cache"}, "toolbench list: --no-cache and --store /tmp/a: give one\n"},
		{[]string{"tokens", "--config", cfg, "--store", "/tmp/a", "--cache-dir", "/tmp/b"}, "toolbench tokens: --cache-dir /tmp/b and --store /tmp/a: give --store only\n"},
		{[]string{"explain", "--config", cfg, "--store", "/dev/null", "read a file"}, "toolbench explain: --store /dev/null: store: cachefile: refused /dev/null: not a folder"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, stdout, stderr := runToolbench(t, tt.args...)
			if code != 2 || stdout != "" || !strings.HasPrefix(stderr, tt.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and stderr starting %q", code, stdout, stderr, tt.want)
			}
		})
	}
}

// TestStoreUnreachable: a PostgreSQL store that cannot be reached is a
// failure of the run (exit 1), not of the flags, and its message names
// the URL without its password.
func TestStoreUnreachable(t *testing.T) {
	code, _, stderr := runToolbench(t, "list", "--config", "/nonexistent/mcp.json", "--store", "postgres://app:s3cr3t@127.0.0.1:1/toolsift?connect_timeout=5")
	if code != 1 || !strings.Contains(stderr, "127.0.0.1:1/toolsift") || strings.Contains(stderr, "s3cr3t") || strings.Contains(stderr, "Usage:") {
		t.Errorf("exit %d, stderr %q; want exit 1 naming the URL without its password, and no usage", code, stderr)
	}
}

// TestVersion: --version (and its spellings) prints the program's version.
func TestVersion(t *testing.T) {
	for _, arg := range []string{"--version", "-version", "version"} {
		code, stdout, stderr := runToolbench(t, arg)
		if want := "toolbench " + cli.Version() + "\n"; code != 0 || stdout != want || stderr != "" {
			t.Errorf("toolbench %s: exit %d, stdout %q, stderr %q; want exit 0 and %q", arg, code, stdout, stderr, want)
		}
	}
}

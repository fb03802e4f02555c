package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsift/toolsift/internal/agenttest"
)

// rugPullConfig is runConfig's server, under the same name, with a
// changed get_weather description when pulled.
func rugPullConfig(t *testing.T, pulled bool) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{runTestServerEnv: "1"}
	if pulled {
		env["TOOLBENCH_TEST_RUGPULL"] = "1"
	}
	cfg, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"city": map[string]any{"command": exe, "args": []string{"-test.run=^$"}, "env": env},
	}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTrust: a server that changes a tool's description between runs is
// warned about by list (and every command that connects), until trust
// accepts the new version.
func TestTrust(t *testing.T) {
	cache := t.TempDir()
	before, after := rugPullConfig(t, false), rugPullConfig(t, true)
	if code, out, errs := runToolbench(t, "list", "--config", before, "--store", cache, "--quiet"); code != 0 || strings.Contains(out+errs, "changed since first seen") {
		t.Fatalf("first list: exit %d\n%s\n%s", code, out, errs)
	}
	const warn = `city: warning: tool "city__get_weather" changed since first seen (description); its readOnlyHint is ignored until accepted: toolbench trust city`
	code, out, errs := runToolbench(t, "list", "--config", after, "--store", cache, "--quiet")
	if code != 0 || !strings.Contains(out, warn) || strings.Count(out+errs, "changed since first seen") != 1 {
		t.Fatalf("list after the change: exit %d, want %q in\n%s\n%s", code, warn, out, errs)
	}
	// Every connecting command prints it once: not from the Hub's log
	// and again from the server's status.
	const line = `warning: server city: tool "city__get_weather" changed since first seen (description); its readOnlyHint is ignored until accepted: toolbench trust city`
	srv := agenttest.NewServer(agenttest.Reply{Content: "Hello."})
	defer srv.Close()
	for _, args := range [][]string{
		{"tokens", "--config", after, "--store", cache, "--quiet", "--connect"},
		{"run", "--config", after, "--store", cache, "--quiet", "--eager", "--base-url", srv.URL, "--json", "--stream=false", "Say hello"},
	} {
		code, out, errs := runToolbench(t, args...)
		if n := strings.Count(errs, "changed since first seen"); code != 0 || n != 1 || !strings.Contains(errs, line) {
			t.Errorf("%s: exit %d, the warning %d times, want once as %q\nstdout:\n%s\nstderr:\n%s", args[0], code, n, line, out, errs)
		}
	}
	code, out, errs = runToolbench(t, "trust", "--config", after, "--store", cache, "--quiet", "city")
	if code != 0 || !strings.Contains(out, "accepted city__get_weather (description)") {
		t.Fatalf("trust: exit %d\n%s\n%s", code, out, errs)
	}
	if code, out, errs := runToolbench(t, "list", "--config", after, "--store", cache, "--quiet"); code != 0 || strings.Contains(out+errs, "changed since first seen") {
		t.Fatalf("list after trust: exit %d\n%s\n%s", code, out, errs)
	}
	if code, out, _ := runToolbench(t, "trust", "--config", after, "--store", cache, "--quiet", "city"); code != 0 || !strings.Contains(out, "no changed tools") {
		t.Fatalf("trust again: exit %d\n%s", code, out)
	}
	if code, _, errs := runToolbench(t, "trust", "--config", after, "--store", cache, "--quiet", "nope"); code != 1 || !strings.Contains(errs, `no such server "nope"`) {
		t.Fatalf("trust of an unknown server: exit %d\n%s", code, errs)
	}
}

// TestNameList: a summary of 1,000 failed servers is one short line.
func TestNameList(t *testing.T) {
	var names []string
	for i := range 1000 {
		names = append(names, "server"+strings.Repeat("x", i%3))
	}
	got := nameList(names, maxNamesShown)
	if !strings.HasSuffix(got, "and 990 more") || strings.Count(got, ",") != 9 {
		t.Errorf("nameList = %q", got)
	}
	if got := nameList(names[:2], maxNamesShown); got != "server, serverx" {
		t.Errorf("nameList of 2 = %q", got)
	}
}

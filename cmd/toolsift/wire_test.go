package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/toolsift/toolsift/internal/npmtest"
	"github.com/toolsift/toolsift/internal/testenv"
)

// TestServeBothWiresTypeScript is issue 32's "Done when": a client of MCP
// 2026-07-28 (the official TypeScript SDK v2, @modelcontextprotocol/client,
// pinned to that revision) and a client of 2025-11-25 (the TypeScript SDK
// v1, testdata/client.mjs) use the same toolsift serve --listen URL at
// once, each searching, finding and calling tools: the first without a
// session (a fixed list, the found tool called by name and through
// call_tool), the second with one (the found tool joins its list).
func TestServeBothWiresTypeScript(t *testing.T) {
	config, dir := npmConfig(t)
	clientDir := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "client")
	if _, err := os.Stat(filepath.Join(clientDir, "dist", "index.mjs")); err != nil {
		if npmtest.Required() {
			t.Fatalf("@modelcontextprotocol/client must be installed in upstream/testdata/npm here: %v", err)
		}
		t.Skipf("@modelcontextprotocol/client is not installed: run the test command, bash .ci/test, which installs it (npm ci in upstream/testdata/npm): %v", err)
	}
	const token = "both-wires-token"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var log testenv.Buffer
	e := &env{
		stdin: strings.NewReader(""), stdout: &log, stderr: &log,
		getenv: func(k string) string { return map[string]string{tokenEnv: token}[k] },
	}
	addr, done := startServe(ctx, t, e, &log, "serve", "--config", config, "--listen", "127.0.0.1:0")
	url := "http://" + addr + "/mcp"

	// serve listens before its servers have listed (they join as they
	// do): the clients start once all three are in the catalog, so that
	// the first search finds get-sum.
	waitReady(t, &log, "everything", "filesystem", "memory")

	// Both clients at once.
	old, oldOut, oldErr := node(t, dir, "http", url, token, "1")
	modern := exec.Command("node", "testdata/client2026.mjs", clientDir, url, token)
	var modernOut, modernErr strings.Builder
	modern.Stdout, modern.Stderr = &modernOut, &modernErr
	var wg sync.WaitGroup
	var oldRun, modernRun error
	wg.Add(2)
	go func() { defer wg.Done(); oldRun = old.Run() }()
	go func() { defer wg.Done(); modernRun = modern.Run() }()
	wg.Wait()
	if oldRun != nil {
		t.Fatalf("2025-11-25 client: %v\nstdout: %s\nstderr: %s\nserve: %s", oldRun, oldOut, oldErr, log.String())
	}
	if modernRun != nil {
		t.Fatalf("2026-07-28 client: %v\nstdout: %s\nstderr: %s\nserve: %s", modernRun, modernOut.String(), modernErr.String(), log.String())
	}

	var rep struct{ Clients []clientReport }
	if err := json.Unmarshal(oldOut.Bytes(), &rep); err != nil || len(rep.Clients) != 1 {
		t.Fatalf("2025-11-25 client's report %q: %v", oldOut, err)
	}
	rep.Clients[0].check(t) // searched, found, called; the found tool joined its session's list

	var r struct {
		ProtocolVersion   string
		SessionID         *string
		Listed            []string
		SearchIsError     bool
		Found             []struct{ Name, Server string }
		ListedAfterSearch bool
		ByName            string
		ByNameIsError     bool
		CallTool          string
		Relisted          []string
	}
	if err := json.Unmarshal([]byte(modernOut.String()), &r); err != nil {
		t.Fatalf("2026-07-28 client's report %q: %v\nstderr: %s", modernOut.String(), err, modernErr.String())
	}
	if r.ProtocolVersion != "2026-07-28" || r.SessionID != nil {
		t.Errorf("2026-07-28 client: negotiated %q with session %v, want 2026-07-28 and no session", r.ProtocolVersion, r.SessionID)
	}
	found := slices.ContainsFunc(r.Found, func(f struct{ Name, Server string }) bool {
		return f.Name == "everything__get-sum" && f.Server == "everything"
	})
	if r.SearchIsError || !found || r.ListedAfterSearch {
		t.Errorf("2026-07-28 client: search_tools found %+v (isError %v, listed %v), want everything__get-sum, not listed", r.Found, r.SearchIsError, r.ListedAfterSearch)
	}
	if r.ByName != "The sum of 40 and 2 is 42." || r.ByNameIsError {
		t.Errorf("2026-07-28 client: everything__get-sum by name = %q (isError %v), want the sum", r.ByName, r.ByNameIsError)
	}
	if r.CallTool != "The sum of 1 and 2 is 3." {
		t.Errorf("2026-07-28 client: call_tool(everything__get-sum) = %q, want the sum", r.CallTool)
	}
	if !slices.Contains(r.Listed, "search_tools") || slices.Contains(r.Relisted, "everything__get-sum") || !slices.Equal(r.Listed, r.Relisted) {
		t.Errorf("2026-07-28 client: listed %v, then %v: want the fixed list both times", r.Listed, r.Relisted)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("serve exited with %d after its ctx ended", code)
	}
	if t.Failed() {
		t.Logf("serve's log:\n%s", log.String())
	}
}

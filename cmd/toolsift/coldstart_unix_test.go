//go:build unix

package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/internal/testenv"
)

// TestServeColdStart gates its slow upstream with a FIFO (syscall.Mkfifo),
// so it is built where FIFOs exist; the upstream's side, gateToolsList,
// is in coldstart_test.go.

// TestServeColdStart: on a first start (an empty cache) with one server
// slow to list its tools, serve listens at once and answers initialize,
// tools/list and search_tools with the fast server's tools; once the slow
// one lists, serve logs its arrival, its pinned tool joins the session's
// list with a tools/list_changed, and search_tools finds it.
func TestServeColdStart(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(cfg, []byte(`{"mcpServers": {
  "fast": {"command": "`+exe+`", "args": ["-test.run=^$"], "env": {"`+upstreamEnv+`": "1"}},
  "slow": {"command": "`+exe+`", "args": ["-test.run=^$"], "env": {"`+upstreamEnv+`": "2", "`+upstreamGateEnv+`": "`+gate+`"}}
}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	lctx, lcancel := context.WithTimeout(context.Background(), testenv.WaitLimit())
	defer lcancel()
	limit := lctx.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := &logWatch{wrote: make(chan struct{}, 1)}
	addr := make(chan string, 1)
	e := &env{stdin: strings.NewReader(""), stdout: log, stderr: log, getenv: func(string) string { return "" },
		listening: func(a string) { addr <- a }}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, e, []string{"serve", "--config", cfg, "--listen", "127.0.0.1:0", "--store", filepath.Join(dir, "cache"), "--pin", "slow__lookup", "--connect-wait", "100ms"})
	}()
	released := false
	release := func() {
		// Opening the FIFO for writing waits for the upstream's open.
		opened := make(chan error, 1)
		go func() {
			f, err := os.OpenFile(gate, os.O_WRONLY, 0)
			if err == nil {
				f.Close()
			}
			opened <- err
		}()
		select {
		case err := <-opened:
			if err != nil {
				t.Fatal(err)
			}
		case <-limit:
			t.Fatalf("the slow server never asked for its tools:\n%s", log)
		}
		released = true
	}
	defer func() {
		if !released { // serve's Close kills the upstream; this just frees it sooner
			if f, err := os.OpenFile(gate, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
		}
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exited with %d after its ctx ended", code)
		}
		if t.Failed() {
			t.Logf("serve's log:\n%s", log)
		}
	}()
	var url string
	select {
	case a := <-addr:
		url = "http://" + a + "/mcp"
	case code := <-done:
		t.Fatalf("serve ended with %d before listening:\n%s", code, log)
	case <-limit:
		t.Fatalf("serve is not listening in time:\n%s", log)
	}

	changed := make(chan struct{}, 16)
	client := mcp.NewClient(&mcp.Implementation{Name: "coldstart-test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	cctx, ccancel := context.WithTimeout(ctx, testenv.WaitLimit())
	defer ccancel()
	cs, err := client.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}) // a session: found tools join its list
	if err != nil {
		t.Fatalf("initialize while slow lists: %v", err)
	}
	defer cs.Close()
	listed := func() []string { t.Helper(); return listedNames(t, cctx, cs) }
	search := func() string {
		t.Helper()
		res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "look a word up"}})
		if err != nil || res.IsError || len(res.Content) == 0 {
			t.Fatalf("search_tools: %+v, %v", res, err)
		}
		return res.Content[0].(*mcp.TextContent).Text
	}
	log.waitFor(t, `msg="server ready" server=fast`, limit)
	if names := listed(); slices.Contains(names, "slow__lookup") || !slices.Contains(names, "search_tools") {
		t.Fatalf("tools/list while slow lists: %v", names)
	}
	if found := search(); !strings.Contains(found, "fast__lookup") || strings.Contains(found, "slow__lookup") {
		t.Fatalf("search_tools while slow lists: %s\nwant fast__lookup only", found)
	} else if !strings.Contains(found, `"incomplete":{"connecting":["slow"]`) {
		t.Errorf("search_tools while slow lists: %s\nwant it to say slow is still connecting", found)
	}

	// The found fast__lookup joined the list: its list_changed is taken,
	// so that the next one is slow's.
	select {
	case <-changed:
	case <-limit:
		t.Fatalf("no tools/list_changed after search_tools found fast__lookup")
	}
	if names := listed(); !slices.Contains(names, "fast__lookup") {
		t.Fatalf("tools/list after the search: %v, want the found fast__lookup", names)
	}

	release()
	log.waitFor(t, `msg="server ready" server=slow`, limit)
	// The pinned tool joins the session's list: a list_changed says so.
	select {
	case <-changed:
	case <-limit:
		t.Fatalf("no tools/list_changed after slow joined; tools/list: %v", listed())
	}
	if names := listed(); !slices.Contains(names, "slow__lookup") {
		t.Fatalf("tools/list after slow joined: %v, want the pinned slow__lookup", names)
	}
	if found := search(); !strings.Contains(found, "slow__lookup") || strings.Contains(found, `"incomplete"`) {
		t.Fatalf("search_tools after slow listed: %s\nwant slow__lookup, nothing said missing", found)
	}
}

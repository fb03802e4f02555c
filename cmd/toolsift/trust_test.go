package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/upstream"
)

// upstreamEnv makes the test binary an MCP server over stdio (see
// upstream): its value says which version of its tool it lists.
const upstreamEnv = "TOOLSIFT_TEST_UPSTREAM"

// upstream serves one read-only tool, lookup, whose description is that of
// version v: a server that changes its tool between runs.
func serveUpstream(v string) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "up", Version: v}, nil)
	srv.AddTool(&mcp.Tool{
		Name: "lookup", Description: "Look a word up (version " + v + ").",
		InputSchema: map[string]any{"type": "object"}, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: v}}}, nil
	})
	gateToolsList(srv) // coldstart_test.go
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		os.Exit(1)
	}
}

func upstreamConfig(t *testing.T, version string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mcp.json")
	cfg := `{"mcpServers": {"up": {"command": "` + exe + `", "args": ["-test.run=^$"], "env": {"` + upstreamEnv + `": "` + version + `"}}}}`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestServeTrust: a running toolsift serve neither lists nor calls a tool
// that changed since first seen (the refusal names toolbench trust); once
// another process accepts it
// (as toolbench trust does, through a Hub of its own on the same trust records),
// serve's next tools/list or call reads the trust records again, tells the client
// (notifications/tools/list_changed) and lists the new version with its
// readOnlyHint.
func TestServeTrust(t *testing.T) {
	cache := t.TempDir()
	// The first run trusts version 1.
	var stderr strings.Builder
	e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: &stderr, getenv: func(string) string { return "" }}
	if code := run(context.Background(), e, []string{"serve", "--config", upstreamConfig(t, "1"), "--cache-dir", cache}); code != 0 {
		t.Fatalf("first serve: exit %d\n%s", code, stderr.String())
	}

	// Version 2 under serve, with the go-sdk client on its stdio.
	cfg2 := upstreamConfig(t, "2")
	clientIn, serveOut := io.Pipe()
	serveIn, clientOut := io.Pipe()
	stderr.Reset()
	serveErr := &logWatch{wrote: make(chan struct{}, 1)}
	e = &env{stdin: serveIn, stdout: serveOut, stderr: serveErr, getenv: func(string) string { return "" }}
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), e, []string{"serve", "--config", cfg2, "--store", cache, "--pin", "up__lookup", "--connect-timeout", testenv.WaitLimit().String()})
		serveOut.Close()
	}()
	changed := make(chan struct{}, 8)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	ctx, cancel := context.WithTimeout(context.Background(), testenv.WaitLimit())
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, serveErr.String())
	}
	lookup := func() *mcp.Tool {
		t.Helper()
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		for _, tl := range res.Tools {
			if tl.Name == "up__lookup" {
				return tl
			}
		}
		return nil
	}
	// Version 2 is not in the cache: serve answers at once and the server
	// joins when it has listed.
	serveErr.waitFor(t, `msg="server ready" server=up`, ctx.Done())
	// Changed since first seen: quarantined until accepted.
	if tl := lookup(); tl != nil {
		t.Fatalf("before trust: listed %q: want the changed tool off the list", tl.Description)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__lookup", Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("call before trust: %v", err)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !res.IsError || !strings.Contains(text, "quarantined") || !strings.Contains(text, "toolbench trust --config CONFIG up up__lookup") {
		t.Fatalf("call before trust: %q (isError %v): want a refusal naming the trust command", text, res.IsError)
	}

	// Another process accepts version 2.
	other, err := config.Load(cfg2, nil)
	if err != nil {
		t.Fatal(err)
	}
	hub, err := upstream.NewHub(other, &upstream.HubOptions{Store: storeIn(t, cache), Start: upstream.StartEager, MaxRestarts: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := hub.Connect(ctx, nil); err != nil {
		t.Fatal(err)
	}
	accepted, err := hub.Trust(ctx, "up")
	hub.Close()
	if err != nil || len(accepted) != 1 {
		t.Fatalf("trust: %v, %v", accepted, err)
	}

	// A call is enough for serve to notice and tell the client.
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__lookup", Arguments: map[string]any{}}); err != nil {
		t.Fatalf("call: %v", err)
	}
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatalf("no notifications/tools/list_changed after trust\n%s", serveErr.String())
	}
	if tl := lookup(); tl == nil || !strings.Contains(tl.Description, "version 2") || tl.Annotations == nil || !tl.Annotations.ReadOnlyHint {
		t.Fatalf("after trust: %+v: want version 2 with readOnlyHint", tl)
	}
	if !strings.Contains(serveErr.String(), "tool trust records changed on disk") {
		t.Errorf("serve's log does not say it read the trust records again:\n%s", serveErr.String())
	}
	// The client goes away as a stdio client does: serve's stdin ends and
	// it exits; only then does the client stop reading. (Closing the
	// client first closed the pipe serve was still writing to, and serve
	// exited 1 with "read/write on closed pipe", once in a CI run.)
	clientOut.Close()
	if code := <-done; code != 0 {
		t.Errorf("serve: exit %d\n%s", code, serveErr.String())
	}
	cs.Close()
}

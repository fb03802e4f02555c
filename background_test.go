package toolsift_test

import (
	"context"
	"io"
	"net"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/upstream"
)

// gatedServer is an in-process go-sdk server with one tool whose
// tools/list answers only once release is closed: a server slow to list.
func gatedServer(name, description string, release <-chan struct{}) config.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: name, Description: description, InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil
		})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				select {
				case <-release:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return next(ctx, method, req)
		}
	})
	return config.Server{Dial: func(ctx context.Context) (io.ReadWriteCloser, error) {
		serverSide, clientSide := net.Pipe()
		if _, err := srv.Connect(ctx, &mcp.IOTransport{Reader: serverSide, Writer: serverSide}, nil); err != nil {
			return nil, err
		}
		return clientSide, nil
	}}
}

// TestOpenBackground: over a Hub with HubOptions.Background, OpenHub
// returns while a server is still listing its tools: the others are
// indexed and searched, Status shows it connecting; once it lists, its
// tools join the index and OnChange hears them.
func TestOpenBackground(t *testing.T) {
	ready, release := make(chan struct{}), make(chan struct{})
	close(ready)
	cfg := &config.Config{Servers: map[string]config.Server{
		"fast": gatedServer("forecast", "Get the weather forecast for a city.", ready),
		"slow": gatedServer("convert", "Convert an amount between currencies.", release),
	}}
	changes := make(chan tool.Change, 16)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.WaitLimit())
	defer cancel()
	hub, err := upstream.NewHub(cfg, &upstream.HubOptions{Background: true, Store: dirStore(t, t.TempDir())})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := toolsift.OpenHub(ctx, hub, &toolsift.Options{
		NoSemantic: true, Pin: []string{"slow__*"},
		OnChange: func(c tool.Change) { changes <- c },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	defer close(release) // a failed test must not leave the server waiting
	if _, ok := ts.Get("slow__convert"); ok {
		t.Fatal("slow__convert indexed before its server listed it")
	}
	if p := ts.Pinned(); len(p) != 0 {
		t.Errorf("Pinned = %v before slow listed, want none", p)
	}
	states := map[string]upstream.State{}
	for _, st := range ts.Status() {
		states[st.Name] = st.State
	}
	if states["slow"] != upstream.StateConnecting {
		t.Errorf("slow is %s while it lists, want %s", states["slow"], upstream.StateConnecting)
	}
	// The fast server may still be on its way in too: wait for it as the
	// slow one is waited for, through OnChange, unless it is in already.
	wait := func(server string) {
		t.Helper()
		for {
			if slices.ContainsFunc(ts.Tools(), func(x tool.Tool) bool { return x.Server == server }) {
				return
			}
			select {
			case <-changes:
			case <-ctx.Done():
				t.Fatalf("%s's tools never reached the index: %v", server, ctx.Err())
			}
		}
	}
	wait("fast")
	found, err := ts.Search(ctx, "currency conversion", 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range found {
		if m.Tool.Server == "slow" {
			t.Fatalf("Search found %s before its server listed it", m.Tool.Name)
		}
	}

	select { // unblocks the listing (close is for the end)
	case release <- struct{}{}:
	case <-ctx.Done():
		t.Fatalf("slow never asked for its tools: %v", ctx.Err())
	}
	wait("slow")
	found, err = ts.Search(ctx, "currency conversion", 1)
	if err != nil || len(found) != 1 || found[0].Tool.Name != "slow__convert" {
		t.Fatalf("Search = %v, %v; want slow__convert", found, err)
	}
	if p := ts.Pinned(); !slices.Equal(p, []string{"slow__convert"}) {
		t.Errorf("Pinned = %v after slow listed, want [slow__convert]", p)
	}
	off, err := ts.Think(ctx, think.Request{Query: retrieval.Query{Task: "the weather in Bern"}})
	if err != nil {
		t.Fatal(err)
	}
	var pinned []string
	for _, m := range off.Ranked {
		if m.Pinned {
			pinned = append(pinned, m.Tool.Name)
		}
	}
	if !slices.Equal(pinned, []string{"slow__convert"}) {
		t.Errorf("the Think step pins %v, want [slow__convert]", pinned)
	}
	for _, st := range ts.Status() {
		if st.Name == "slow" && (st.State != upstream.StateReady || st.Tools != 1) {
			t.Errorf("slow: %s with %d tools, want ready with 1", st.State, st.Tools)
		}
	}
}

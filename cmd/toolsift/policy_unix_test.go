//go:build unix

package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/internal/testenv"
)

// TestServePolicyReload: serve reads --policy again on SIGHUP. Its stdio
// client is anonymous: the first policy lets it see up's tool, the second
// takes it off its list (tools/list_changed) and a call of it is an
// unknown tool; a file that no longer reads keeps the policy in force,
// with a warning naming file:line:col.
func TestServePolicyReload(t *testing.T) {
	policy := filepath.Join(t.TempDir(), "policy.json")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(policy, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"anonymous": {"allow": ["up"]}}`)
	clientIn, serveOut := io.Pipe()
	serveIn, clientOut := io.Pipe()
	serveErr := &logWatch{wrote: make(chan struct{}, 1)}
	e := &env{stdin: serveIn, stdout: serveOut, stderr: serveErr, getenv: func(string) string { return "" }}
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), e, []string{"serve", "--config", upstreamConfig(t, "1"), "--no-cache", "--pin", "up__lookup",
			"--policy", policy, "--connect-timeout", testenv.WaitLimit().String()})
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
	defer func() {
		// As a stdio client goes away: serve's stdin ends and it exits,
		// then the client stops reading (see TestServeTrust).
		clientOut.Close()
		if code := <-done; code != 0 {
			t.Errorf("serve: exit %d\n%s", code, serveErr.String())
		}
		cs.Close()
	}()
	names := func() []string { t.Helper(); return listedNames(t, ctx, cs) }
	serveErr.waitFor(t, `msg="server ready" server=up`, ctx.Done())
	for !slices.Contains(names(), "up__lookup") { // the pin joins when up has listed
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("up__lookup never listed: %v\n%s", names(), serveErr.String())
		}
	}

	write(`{
  "anonymous": {"deny": ["up"]}
}`)
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	serveErr.waitFor(t, `msg="policy reloaded"`, ctx.Done())
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no tools/list_changed after the reload")
	}
	if got := names(); slices.Contains(got, "up__lookup") {
		t.Errorf("after the reload: %v still lists up__lookup", got)
	}
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__lookup", Arguments: map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), `unknown tool "up__lookup": no tool has this name`) {
		t.Errorf("call after the reload: %v, want the unknown tool of a tool no server has", err)
	}

	write("{\n  \"anonymous\": {\"alow\": [\"up\"]}}")
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	serveErr.waitFor(t, `policy not reloaded`, ctx.Done())
	if want := policy + `:2:17: field \"anonymous\": unknown field \"alow\"`; !strings.Contains(serveErr.String(), want) {
		t.Errorf("log lacks %s:\n%s", want, serveErr.String())
	}
	if got := names(); slices.Contains(got, "up__lookup") {
		t.Errorf("after a bad file: %v lists up__lookup: the policy in force must stay", got)
	}
}

//go:build unix

package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/upstream"
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
	changed := make(chan struct{}, 8)
	ctx, cs, serveErr := serveStdio(t, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	}, "serve", "--config", upstreamConfig(t, "1"), "--no-cache", "--pin", "up__lookup",
		"--policy", policy, "--connect-timeout", testenv.WaitLimit().String())
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
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__lookup", Arguments: map[string]any{}})
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

// TestServeRateLimitReload: serve enforces --policy's rate limits, and a
// SIGHUP that changes a limit enforces the new one. Its stdio client is
// anonymous: one call an hour, then the refusal naming the limit and the
// seconds to wait; reloaded with three, three go through (a changed
// limit starts with a full bucket) and the fourth is refused.
func TestServeRateLimitReload(t *testing.T) {
	policy := filepath.Join(t.TempDir(), "policy.json")
	write := func(calls int) {
		t.Helper()
		src := `{"anonymous": {"allow": ["up"], "limits": [{"name": "hourly", "calls": ` + strconv.Itoa(calls) + `, "per": "1h"}]}}`
		if err := os.WriteFile(policy, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(1)
	ctx, cs, serveErr := serveStdio(t, nil, "serve", "--config", upstreamConfig(t, "1"), "--no-cache",
		"--policy", policy, "--connect-timeout", testenv.WaitLimit().String())
	serveErr.waitFor(t, `msg="server ready" server=up`, ctx.Done())
	call := func() (string, bool) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "up__lookup", "arguments": map[string]any{}}})
		if err != nil {
			t.Fatalf("call_tool: %v\n%s", err, serveErr.String())
		}
		var text strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text.WriteString(tc.Text)
			}
		}
		return text.String(), res.IsError
	}
	limitedBy := func(what string) {
		t.Helper()
		text, isErr := call()
		if !isErr || !strings.Contains(text, `rate limited by the gateway's limit "hourly"`) || !strings.Contains(text, "retry in ") {
			t.Errorf("%s: %q (isError %v), want refused by the limit hourly", what, text, isErr)
		}
	}
	if text, isErr := call(); isErr {
		t.Fatalf("the first call: %q", text)
	}
	limitedBy("the second call")

	write(3)
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	serveErr.waitFor(t, `msg="policy reloaded"`, ctx.Done())
	if !strings.Contains(serveErr.String(), "limits=1") {
		t.Errorf("the reload's log line does not count the limit:\n%s", serveErr.String())
	}
	for i := range 3 {
		if text, isErr := call(); isErr {
			t.Fatalf("call %d after the reload: %q", i+1, text)
		}
	}
	limitedBy("the fourth call after the reload")
	if !strings.Contains(serveErr.String(), `msg="rate limited"`) {
		t.Errorf("no rate limited line in the log:\n%s", serveErr.String())
	}
}

// serveStdio runs toolsift with args in this process, serving over pipes,
// and connects a go-sdk client with opts to it. When t ends the client
// goes away as a stdio client does (serve's stdin ends, serve must exit 0,
// then the client closes). The context bounds the test's waits.
func serveStdio(t *testing.T, opts *mcp.ClientOptions, args ...string) (context.Context, *mcp.ClientSession, *logWatch) {
	t.Helper()
	clientIn, serveOut := io.Pipe()
	serveIn, clientOut := io.Pipe()
	serveErr := &logWatch{wrote: make(chan struct{}, 1)}
	e := &env{stdin: serveIn, stdout: serveOut, stderr: serveErr, getenv: func(string) string { return "" }}
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), e, args)
		serveOut.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), testenv.WaitLimit())
	t.Cleanup(cancel)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts).Connect(ctx,
		&mcp.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, serveErr.String())
	}
	t.Cleanup(func() {
		// serve's stdin ends and it exits, then the client stops reading
		// (see TestServeTrust).
		clientOut.Close()
		if code := <-done; code != 0 {
			t.Errorf("serve: exit %d\n%s", code, serveErr.String())
		}
		cs.Close()
	})
	return ctx, cs, serveErr
}

// TestServeReadyBeforeFirstLook: a server that has listed its tools before
// serve first looks at the servers (a fast server, a busy machine) is
// logged "server ready" all the same, as the tests and operators wait for.
func TestServeReadyBeforeFirstLook(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testenv.WaitLimit())
	defer cancel()
	firstLook = func(ts *toolsift.Toolset) {
		for {
			st := ts.Status()
			if len(st) == 1 && st[0].State != upstream.StateConnecting {
				return
			}
			select {
			case <-time.After(5 * time.Millisecond):
			case <-ctx.Done():
				return
			}
		}
	}
	t.Cleanup(func() { firstLook = func(*toolsift.Toolset) {} })
	ctx2, _, serveErr := serveStdio(t, nil, "serve", "--config", upstreamConfig(t, "1"), "--no-cache",
		"--connect-timeout", testenv.WaitLimit().String())
	serveErr.waitFor(t, `msg="server ready" server=up`, ctx2.Done())
	if !strings.Contains(serveErr.String(), `msg=ready servers=1 started=1 connecting=0`) {
		t.Errorf("serve's ready line does not count up as started:\n%s", serveErr.String())
	}
}

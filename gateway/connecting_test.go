package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/upstream"
)

// TestSearchSaysWhatIsConnecting: over a Hub of Background, with the
// servers text (slow to list) and broken (failed) besides math, a
// search_tools answer names the servers still connecting and failed that
// the caller may reach, in its text and structured content, on both
// wires; the servers out of the caller's scope are never named.
func TestSearchSaysWhatIsConnecting(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	cfg := scopedServers(t)
	text := cfg.Servers["text"]
	cfg.Servers["text"] = config.Server{Dial: func(ctx context.Context) (io.ReadWriteCloser, error) {
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return text.Dial(ctx)
	}}
	cfg.Servers["broken"] = config.Server{Command: "broken", Err: errors.New("unusable as configured")}
	pol, err := config.ParsePolicy("policy.json", []byte(`{"rules": [
		{"teams": ["a"], "allow": ["math"]},
		{"teams": ["b"], "allow": ["text", "broken"]},
	]}`))
	if err != nil {
		t.Fatal(err)
	}
	var mathDone sync.Once
	mathIn := make(chan struct{})
	gw, err := gateway.Open(context.Background(), cfg, &gateway.Options{
		Toolset: toolsift.Options{NoSemantic: true, Store: store.NewMemory(), ConnectWait: -1},
		Hub: upstream.HubOptions{Background: true, Progress: func(p upstream.Progress) {
			if p.Pending == 1 { // math is through; text is held
				mathDone.Do(func() { close(mathIn) })
			}
		}},
		Policy: pol,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	srv := httptest.NewServer(asMember(gw.Handler()))
	t.Cleanup(srv.Close) // after the clients' sessions close
	select {
	case <-mathIn:
	case <-time.After(testenv.WaitLimit()):
		t.Fatal("math never listed")
	}
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		for _, c := range []struct {
			user string
			want *think.Incomplete
		}{
			{"alice:a", nil},
			{"bob:b", think.NewIncomplete([]string{"text"}, []string{"broken"})},
		} {
			cl := connectAs(t, srv.URL, c.user, version)
			res, err := cl.CallTool(context.Background(), &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "convert a text to upper case"}})
			if err != nil || res.IsError {
				t.Fatalf("%s %s: search_tools: %v %v", version, c.user, err, resultText(res))
			}
			var ans think.SearchAnswer
			if err := json.Unmarshal([]byte(resultText(res)), &ans); err != nil {
				t.Fatalf("%s %s: answer %s: %v", version, c.user, resultText(res), err)
			}
			if diff := cmp.Diff(c.want, ans.Incomplete); diff != "" {
				t.Errorf("%s %s: incomplete in the text (-want +got):\n%s", version, c.user, diff)
			}
			b, _ := json.Marshal(res.StructuredContent)
			var structured think.SearchAnswer
			if err := json.Unmarshal(b, &structured); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, structured.Incomplete); diff != "" {
				t.Errorf("%s %s: incomplete in the structured content (-want +got):\n%s", version, c.user, diff)
			}
		}
	}
}

// TestCallByNameWaitsForConnecting: a 2026-07-28 client's tools/call by
// name of a tool whose server is still connecting is routed and waited
// for (ConnectWait), never answered as a tool no server has: past the
// wait it says the server is still connecting; once the server lists,
// the same call is answered by the tool. A caller the policy keeps from
// that server is answered as for a tool no server has, before and after.
func TestCallByNameWaitsForConnecting(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	t.Cleanup(open)
	cfg := scopedServers(t)
	text := cfg.Servers["text"]
	cfg.Servers["text"] = config.Server{Dial: func(ctx context.Context) (io.ReadWriteCloser, error) {
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return text.Dial(ctx)
	}}
	pol, err := config.ParsePolicy("policy.json", []byte(`{"rules": [
		{"teams": ["a"], "allow": ["math"]},
		{"teams": ["b"], "allow": ["text"]},
	]}`))
	if err != nil {
		t.Fatal(err)
	}
	listed := make(chan struct{}, 1) // a server's progress, not waited for
	gw, err := gateway.Open(context.Background(), cfg, &gateway.Options{
		Toolset: toolsift.Options{NoSemantic: true, Store: store.NewMemory(), ConnectWait: 50 * time.Millisecond},
		Hub: upstream.HubOptions{Background: true, Progress: func(upstream.Progress) {
			select {
			case listed <- struct{}{}:
			default:
			}
		}},
		Policy: pol,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	srv := httptest.NewServer(asMember(gw.Handler()))
	t.Cleanup(srv.Close)
	// Each way of calling: by name on the 2026 wire, call_tool on both.
	type way struct {
		name string
		call func(user string) string
	}
	var ways []way
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		cls := map[string]*client{"bob": connectAs(t, srv.URL, "bob:b", version), "alice": connectAs(t, srv.URL, "alice:a", version)}
		text := func(res *mcp.CallToolResult, err error) string {
			if err != nil {
				return err.Error()
			}
			return resultText(res)
		}
		if version == "2026-07-28" {
			ways = append(ways, way{version + " by name", func(user string) string {
				return text(cls[user].CallTool(context.Background(), &mcp.CallToolParams{Name: "text__upper", Arguments: map[string]any{}}))
			}})
		}
		ways = append(ways, way{version + " call_tool", func(user string) string {
			return text(cls[user].CallTool(context.Background(), &mcp.CallToolParams{Name: gateway.CallToolName, Arguments: map[string]any{"name": "text__upper", "arguments": map[string]any{}}}))
		}})
	}
	for _, w := range ways {
		if got := w.call("bob"); !strings.Contains(got, "server text is still connecting") {
			t.Errorf("%s: bob's call while text connects: %q, want it to say text is still connecting", w.name, got)
		}
		if got := w.call("alice"); !strings.Contains(got, `unknown tool`) && !strings.Contains(got, "no tool has this name") || strings.Contains(got, "connecting") {
			t.Errorf("%s: alice's call while text connects: %q, want a tool no server has", w.name, got)
		}
	}
	open()
	for deadline := time.After(testenv.WaitLimit()); gw.Toolset().Unlisted(context.Background()) != nil; {
		select {
		case <-listed:
		case <-deadline:
			t.Fatal("text never listed")
		}
	}
	for _, w := range ways {
		if got := w.call("bob"); got != "text.upper" {
			t.Errorf("%s: bob's call once text listed: %q, want text.upper", w.name, got)
		}
		if got := w.call("alice"); !strings.Contains(got, `unknown tool`) && !strings.Contains(got, "no tool has this name") {
			t.Errorf("%s: alice's call once text listed: %q, want a tool no server has", w.name, got)
		}
	}
}

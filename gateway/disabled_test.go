package gateway_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/gateway/audit"
	"github.com/toolsift/toolsift/store"
)

// TestDisabledToolAbsent: a tool its server's config filters out
// (disabledTools, or left out by allowedTools) is, through the gateway,
// exactly a tool no server has: on both wires, by name and through
// call_tool, the same error or result, word for word (the names
// replaced), and nothing in it names the config. The audit log, the
// admin's, says why (disabled).
func TestDisabledToolAbsent(t *testing.T) {
	ctx := context.Background()
	up := mcp.NewServer(&mcp.Implementation{Name: "vault", Version: "1"}, nil)
	for _, name := range []string{"open", "wipe", "peek"} {
		up.AddTool(&mcp.Tool{Name: name, Description: "Do " + name + " to the vault.", InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " done"}}}, nil
			})
	}
	sc := dialed(up)
	sc.AllowedTools = []string{"open", "wipe"} // peek: left out
	sc.DisabledTools = []string{"wipe"}
	st := store.NewMemory()
	gw, err := gateway.Open(ctx, &config.Config{Servers: map[string]config.Server{"vault": sc}}, &gateway.Options{
		Toolset: toolsift.Options{NoSemantic: true, Store: store.NewMemory()},
		Audit:   &audit.Log{Store: st},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	srv := httptest.NewServer(asMember(gw.Handler()))
	t.Cleanup(srv.Close)

	// answer is what a caller learns of calling name, by name and through
	// call_tool, with name replaced by X.
	answer := func(c *client, name string) map[string]string {
		t.Helper()
		res, err := c.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		byName := errString(err)
		if err == nil {
			b, _ := json.Marshal(res)
			byName = string(b)
		}
		res, err = c.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": name}})
		through := errString(err)
		if err == nil {
			b, _ := json.Marshal(res)
			through = string(b)
		}
		return map[string]string{"by name": strings.ReplaceAll(byName, name, "X"), "call_tool": strings.ReplaceAll(through, name, "X")}
	}
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			c := connectAs(t, srv.URL, "alice:a", version)
			if text, isErr := c.call(t, "call_tool", map[string]any{"name": "vault__open"}); isErr || text != "open done" {
				t.Fatalf("call_tool vault__open = %q (isError %v)", text, isErr)
			}
			absent := answer(c, "vault__nosuch")
			for _, name := range []string{"vault__wipe", "vault__peek"} {
				got := answer(c, name)
				if diff := cmp.Diff(absent, got); diff != "" {
					t.Errorf("%s (filtered out by the config) answers unlike a tool no server has (-absent +%s):\n%s", name, name, diff)
				}
				for _, v := range got {
					if strings.Contains(v, "config") || strings.Contains(v, "disabled") || strings.Contains(v, "filtered") {
						t.Errorf("%s's answer names the config: %s", name, v)
					}
				}
			}
		})
	}
	var outcomes []string
	for rec, err := range audit.Records(ctx, st, time.Time{}) {
		if err != nil {
			t.Fatal(err)
		}
		outcomes = append(outcomes, rec.Tool+" "+rec.Outcome)
	}
	// By name, a tool off the list never reaches a handler (the SDK's
	// unknown tool): only call_tool's calls are records.
	var want []string
	for range 2 {
		want = append(want, "vault__open ok", "vault__nosuch unknown", "vault__wipe disabled", "vault__peek disabled")
	}
	if diff := cmp.Diff(want, outcomes); diff != "" {
		t.Errorf("audit outcomes (-want +got):\n%s", diff)
	}
}

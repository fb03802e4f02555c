package gateway_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/store"
)

// TestPolicyHidesNamespacing (issue 33): math and text both list
// shared://notes and the template shared://t/{k}. A caller who sees only
// one of them is given the plain URI and template, read from its server,
// and no toolsift: form (which would tell it that a server out of its
// scope lists the same URI); a caller who sees both is given both
// namespaced forms and the plain URI is refused, as without a policy. On
// both wires, with go-sdk clients.
func TestPolicyHidesNamespacing(t *testing.T) {
	server := func(name string) config.Server {
		s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)
		s.AddTool(&mcp.Tool{Name: "noop", Description: "Nothing.", InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{}}, nil
			})
		s.AddResource(&mcp.Resource{URI: "shared://notes", Name: "notes"}, textResource(name))
		s.AddResource(&mcp.Resource{URI: name + "://own", Name: "own"}, textResource(name))
		s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "shared://t/{k}", Name: "t"}, textResource(name))
		return dialed(s)
	}
	pol, err := config.ParsePolicy("policy.json", []byte(`{"rules": [
		{"teams": ["a"], "allow": ["math"]},
		{"teams": ["b"], "allow": ["text"]},
		{"teams": ["c"], "allow": ["*"]},
	]}`))
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.Open(context.Background(), &config.Config{Servers: map[string]config.Server{"math": server("math"), "text": server("text")}},
		&gateway.Options{Toolset: toolsift.Options{NoSemantic: true, Store: store.NewMemory(), Pin: []string{"*"}}, Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	srv := httptest.NewServer(asMember(gw.Handler()))
	t.Cleanup(srv.Close)

	ctx := context.Background()
	read := func(c *client, uri string) string {
		res, err := c.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			return "error"
		}
		if len(res.Contents) != 1 {
			return "contents: " + strings.Repeat("x", len(res.Contents))
		}
		return res.Contents[0].Text
	}
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			for _, tc := range []struct {
				user, own string
			}{{"alice:a", "math"}, {"bob:b", "text"}} {
				c := connectAs(t, srv.URL, tc.user, version)
				got := lists(t, c)
				want := map[string][]string{
					"tools":     {"call_tool", "search_tools", tc.own + "__noop"},
					"resources": {tc.own + "://own", "shared://notes"},
					"templates": {"shared://t/{k}"},
				}
				slices.Sort(want["tools"])
				slices.Sort(want["resources"])
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s's lists (-want +got):\n%s", tc.user, diff)
				}
				for _, uri := range []string{"shared://notes", "shared://t/x", tc.own + "://own"} {
					if got := read(c, uri); got != "from "+tc.own {
						t.Errorf("%s reading %s: %q, want from %s", tc.user, uri, got, tc.own)
					}
				}
				// The other server's namespaced URI reads as one no server has.
				other := map[string]string{"math": "text", "text": "math"}[tc.own]
				if got := read(c, "toolsift:"+other+"/shared://notes"); got != "error" {
					t.Errorf("%s reading %s's namespaced notes: %q, want an error", tc.user, other, got)
				}
			}

			carol := connectAs(t, srv.URL, "carol:c", version)
			got := lists(t, carol)
			want := map[string][]string{
				"tools":     {"call_tool", "math__noop", "search_tools", "text__noop"},
				"resources": {"math://own", "text://own", "toolsift:math/shared://notes", "toolsift:text/shared://notes"},
				"templates": {"toolsift:math/shared://t/{k}", "toolsift:text/shared://t/{k}"},
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("carol's lists (-want +got):\n%s", diff)
			}
			for uri, want := range map[string]string{
				"toolsift:math/shared://notes": "from math", "toolsift:text/shared://notes": "from text",
				"toolsift:text/shared://t/y": "from text", "shared://notes": "error", "shared://t/y": "error",
			} {
				if got := read(carol, uri); got != want {
					t.Errorf("carol reading %s: %q, want %q", uri, got, want)
				}
			}
		})
	}
}

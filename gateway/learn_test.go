package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/internal/dataset"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/think"
)

// learnServers are upstream go-sdk servers with the retrieval package's
// test tools and a knowledge-graph server's, whose create_entities fails
// when asked to ({"fail": true}).
func learnServers(t *testing.T) *config.Config {
	t.Helper()
	tools, err := dataset.LoadTools("../retrieval/testdata/tools.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	byServer := map[string]*mcp.Server{}
	add := func(server, name, desc string, schema json.RawMessage) {
		s := byServer[server]
		if s == nil {
			s = mcp.NewServer(&mcp.Implementation{Name: server, Version: "1"}, nil)
			byServer[server] = s
		}
		s.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: schema},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				var args struct{ Fail bool }
				_ = json.Unmarshal(req.Params.Arguments, &args)
				return &mcp.CallToolResult{IsError: args.Fail, Content: []mcp.Content{&mcp.TextContent{Text: server + "." + name}}}, nil
			})
	}
	for _, tl := range tools {
		server, name, _ := strings.Cut(tl.Name, "__")
		add(server, name, tl.Description, tl.InputSchema)
	}
	for _, x := range [][2]string{
		{"read_graph", "Read the entire knowledge graph"},
		{"create_entities", "Create multiple new entities in the knowledge graph"},
		{"delete_entities", "Delete multiple entities and their relations from the knowledge graph"},
	} {
		add("kb", x[0], x[1], json.RawMessage(`{"type":"object"}`))
	}
	cfg := &config.Config{Servers: map[string]config.Server{}}
	for name, s := range byServer {
		cfg.Servers[name] = dialed(s)
	}
	return cfg
}

// TestServeLearns: a search_tools answer followed by the same caller's
// successful call of a tool it returned, on either wire, lifts that tool
// for a request like the search in that caller's team; a call by name
// with no search before it, a failed call, and another team's calls
// teach nothing.
func TestServeLearns(t *testing.T) {
	gw, err := gateway.Open(context.Background(), learnServers(t), &gateway.Options{
		Toolset: toolsift.Options{Store: store.NewMemory()},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	srv := httptest.NewServer(asMember(gw.Handler()))
	defer srv.Close()
	const (
		want  = "kb__create_entities"
		again = "note that alice is an engineer at acme"
		ask   = "remember that alice works at acme"
	)
	first := func(c *client, query string) string {
		t.Helper()
		ans := c.search(t, query, 3)
		if len(ans.Tools) == 0 {
			return ""
		}
		return ans.Tools[0].Name
	}
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			team := map[string]string{"2025-11-25": "a", "2026-07-28": "b"}[version]
			alice := connectAs(t, srv.URL, "alice:"+team, version)
			if got := first(alice, ask); got == want {
				t.Fatalf("before any call, %q finds %s first: the test shows nothing", ask, want)
			}
			// A call by name with no search before it teaches nothing.
			if text, isErr := alice.call(t, "call_tool", map[string]any{"name": want, "arguments": map[string]any{}}); isErr {
				t.Fatalf("call_tool %s: %s", want, text)
			}
			if got := first(alice, ask); got == want {
				t.Errorf("after a call with no search, %q finds %s first", ask, want)
			}
			names := func(ans think.SearchAnswer) []string {
				var out []string
				for _, ft := range ans.Tools {
					out = append(out, ft.Name)
				}
				return out
			}
			if got := names(alice.search(t, again, 10)); !slices.Contains(got, want) {
				t.Fatalf("search_tools(%q) = %v: it does not return %s to call", again, got, want)
			}
			// A failed call of it teaches nothing.
			if text, isErr := alice.call(t, "call_tool", map[string]any{"name": want, "arguments": map[string]any{"fail": true}}); !isErr {
				t.Fatalf("call_tool %s with fail: %s, want an error", want, text)
			}
			if got := first(alice, ask); got == want {
				t.Errorf("after a failed call, %q finds %s first", ask, want)
			}
			if got := names(alice.search(t, again, 10)); !slices.Contains(got, want) {
				t.Fatalf("search_tools(%q) = %v: it does not return %s to call", again, got, want)
			}
			if text, isErr := alice.call(t, "call_tool", map[string]any{"name": want, "arguments": map[string]any{}}); isErr {
				t.Fatalf("call_tool %s: %s", want, text)
			}
			if got := first(alice, ask); got != want {
				t.Errorf("after the search and the call, %q finds %s first, want %s", ask, got, want)
			}
			// Another team does not see it.
			other := connectAs(t, srv.URL, "bob:other-"+team, version)
			if got := first(other, ask); got == want {
				t.Errorf("another team's %q finds %s first: it learned from team %s's call", ask, want, team)
			}
		})
	}
}

// With the Toolset's usage memory off (serve --no-learn), a search and a
// successful call of a tool it returned teach nothing.
func TestServeNoLearn(t *testing.T) {
	gw, err := gateway.Open(context.Background(), learnServers(t), &gateway.Options{
		Toolset: toolsift.Options{Store: store.NewMemory(), NoUsage: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	srv := httptest.NewServer(asMember(gw.Handler()))
	t.Cleanup(srv.Close) // after the client's session closes (connectAs)
	alice := connectAs(t, srv.URL, "alice:a", "2025-11-25")
	before := alice.search(t, "remember that alice works at acme", 3)
	if ans := alice.search(t, "note that alice is an engineer at acme", 10); !slices.ContainsFunc(ans.Tools, func(f think.FoundTool) bool { return f.Name == "kb__create_entities" }) {
		t.Fatalf("the search does not return kb__create_entities: %+v", ans.Tools)
	}
	if text, isErr := alice.call(t, "call_tool", map[string]any{"name": "kb__create_entities", "arguments": map[string]any{}}); isErr {
		t.Fatalf("call_tool: %s", text)
	}
	after := alice.search(t, "remember that alice works at acme", 3)
	if len(after.Tools) == 0 || len(before.Tools) == 0 || after.Tools[0].Name != before.Tools[0].Name || after.Tools[0].Name == "kb__create_entities" {
		t.Errorf("with NoUsage the ranking moved: %+v, then %+v", before.Tools, after.Tools)
	}
}

// TestServeLearnScope: Options.Search.LearnScope says who shares what search
// learns. alice and dave (team a) each search and call the same tool;
// then carol (team a, who never called it) finds it first by team, not by
// user; erin (team b) only globally; alice herself in every scope.
func TestServeLearnScope(t *testing.T) {
	const (
		want  = "kb__create_entities"
		again = "note that alice is an engineer at acme"
		ask   = "remember that alice works at acme"
	)
	for _, c := range []struct {
		name              string
		scope             gateway.LearnScope
		carol, erin, self bool // who finds want first afterwards
	}{
		{"team", gateway.LearnByTeam, true, false, true},
		{"user", gateway.LearnByUser, false, false, true},
		{"global", gateway.LearnGlobal, true, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			gw, err := gateway.Open(context.Background(), learnServers(t), &gateway.Options{
				Toolset: toolsift.Options{Store: store.NewMemory()},
				Search:  gateway.SearchOptions{LearnScope: c.scope},
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { gw.Close() })
			srv := httptest.NewServer(asMember(gw.Handler()))
			t.Cleanup(srv.Close) // after the clients' sessions close
			first := func(cl *client) bool {
				t.Helper()
				ans := cl.search(t, ask, 3)
				return len(ans.Tools) > 0 && ans.Tools[0].Name == want
			}
			carol := connectAs(t, srv.URL, "carol:a", "2025-11-25")
			if first(carol) {
				t.Fatalf("before any call, %q finds %s first: the test shows nothing", ask, want)
			}
			alice := connectAs(t, srv.URL, "alice:a", "2025-11-25")
			for _, cl := range []*client{alice, connectAs(t, srv.URL, "dave:a", "2025-11-25")} {
				found := false
				for _, ft := range cl.search(t, again, 10).Tools {
					found = found || ft.Name == want
				}
				if !found {
					t.Fatalf("search_tools(%q) does not return %s to call", again, want)
				}
				if text, isErr := cl.call(t, "call_tool", map[string]any{"name": want, "arguments": map[string]any{}}); isErr {
					t.Fatalf("call_tool %s: %s", want, text)
				}
			}
			erin := connectAs(t, srv.URL, "erin:b", "2025-11-25")
			for _, w := range []struct {
				who  string
				cl   *client
				want bool
			}{{"alice", alice, c.self}, {"carol", carol, c.carol}, {"erin", erin, c.erin}} {
				if got := first(w.cl); got != w.want {
					t.Errorf("%s finds %s first for %q: %v, want %v", w.who, want, ask, got, w.want)
				}
			}
		})
	}
	if _, err := gateway.Open(context.Background(), learnServers(t), &gateway.Options{Toolset: toolsift.Options{Store: store.NewMemory()}, Search: gateway.SearchOptions{LearnScope: 7}}); !errors.Is(err, gateway.ErrOptions) || !strings.Contains(err.Error(), "LearnScope") {
		t.Errorf("LearnScope 7: %v, want an ErrOptions naming LearnScope", err)
	}
}

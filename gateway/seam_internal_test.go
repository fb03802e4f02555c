package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/upstream"
)

// The proxy core consumes a Toolset through the toolset interface only.
var _ toolset = (*toolsift.Toolset)(nil)

// openHub opens a Toolset (no semantic signal, a Memory store) over a Hub
// of cfg's servers, as Open does, closed with the test.
func openHub(t testing.TB, cfg *config.Config) (*toolsift.Toolset, *upstream.Hub) {
	t.Helper()
	hub, err := upstream.NewHub(cfg, &upstream.HubOptions{Store: store.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := toolsift.OpenHub(context.Background(), hub, &toolsift.Options{NoSemantic: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ts.Close() })
	return ts, hub
}

// fakeToolset is a catalog with no server behind it: it finds the tools
// whose description holds every word of the query, in name order, and
// answers their calls itself, counting them.
type fakeToolset struct {
	mu     sync.Mutex
	tools  map[string]tool.Tool
	gen    uint64
	pinned []string
	calls  []string // "name args", in order
}

func newFakeToolset(pinned []string, tools ...tool.Tool) *fakeToolset {
	f := &fakeToolset{tools: map[string]tool.Tool{}, pinned: pinned}
	for _, t := range tools {
		f.tools[t.Name] = t
	}
	return f
}

func (f *fakeToolset) Tools() []tool.Tool {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []tool.Tool
	for _, t := range f.tools {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b tool.Tool) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

func (f *fakeToolset) Get(name string) (tool.Tool, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.tools[name]
	return t, ok
}

func (f *fakeToolset) Generation() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gen
}

func (f *fakeToolset) Pinned() []string { return slices.Clone(f.pinned) }

// remove takes a tool out of the catalog, as a server that went away.
func (f *fakeToolset) remove(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.tools, name)
	f.gen++
}

func (f *fakeToolset) Find(_ context.Context, query string, k, tokens int, skip func(string) bool) (think.SearchAnswer, []tool.Tool, error) {
	ans := think.SearchAnswer{Tools: []think.FoundTool{}}
	words := strings.Fields(strings.ToLower(query))
	if len(words) == 0 {
		return ans, nil, fmt.Errorf("%w: empty query", retrieval.ErrSearch)
	}
	var found []tool.Tool
	for _, t := range f.Tools() {
		if len(found) == k || (skip != nil && skip(t.Name)) {
			continue
		}
		if !slices.ContainsFunc(words, func(w string) bool { return !strings.Contains(strings.ToLower(t.Description), w) }) {
			found = append(found, t)
			ans.Tools = append(ans.Tools, think.FoundTool{Name: t.Name, Server: t.Server, Score: 1, Description: t.Description,
				InputSchema: t.InputSchema, Tier: "full"})
			ans.Tokens += 10
		}
	}
	return ans, found, nil
}

func (f *fakeToolset) Call(_ context.Context, name string, args json.RawMessage) (tool.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.tools[name]; !ok {
		return tool.Result{}, fmt.Errorf("%w: %q", tool.ErrUnknown, name)
	}
	f.calls = append(f.calls, name+" "+string(args))
	return tool.Result{Content: "the fake answers " + name}, nil
}

// TestProxyOverAFake: the proxy core serves whatever stands behind its
// seam: a catalog with no server behind it (and a Hub with none) lists
// its pinned tools, answers search_tools with its Find (the found tool
// joining the session's list), routes calls to its Call, and takes a tool
// it no longer has off the list.
func TestProxyOverAFake(t *testing.T) {
	mk := func(server, name, desc string) tool.Tool {
		return tool.Tool{Name: server + "__" + name, OriginalName: name, Server: server, Description: desc,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}.WithHash()
	}
	fake := newFakeToolset([]string{"notes__read"},
		mk("notes", "read", "Read a note."),
		mk("weather", "forecast", "Get the weather forecast for a city."),
		mk("weather", "alerts", "Get the weather alerts for a region."),
		mk("mail", "send", "Send an email."),
	)
	hub, err := upstream.NewHub(nil, &upstream.HubOptions{Store: store.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hub.Close() })
	if err := hub.Connect(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	p, err := newProxy(fake, hub, &proxyOptions{PinnedTools: fake.Pinned()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	if _, err := p.newServer().Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	changed := make(chan struct{}, 8)
	cl := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := cl.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	listed := func() []string {
		t.Helper()
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		return names
	}
	if got, want := listed(), []string{CallToolName, "notes__read", think.SearchToolName}; !slices.Equal(got, want) {
		t.Errorf("first list %v, want %v (the fake's pinned tool beside the proxy's own)", got, want)
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: think.SearchToolName, Arguments: map[string]any{"query": "weather forecast"}})
	if err != nil || res.IsError {
		t.Fatalf("search_tools: %v %+v", err, res)
	}
	var ans think.SearchAnswer
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &ans); err != nil {
		t.Fatal(err)
	}
	if len(ans.Tools) != 1 || ans.Tools[0].Name != "weather__forecast" || !ans.Listed {
		t.Fatalf("search_tools answered %+v, want the fake's one match, listed", ans)
	}
	if got := listed(); !slices.Contains(got, "weather__forecast") {
		t.Errorf("list after the search %v, want weather__forecast in it", got)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: think.SearchToolName, Arguments: map[string]any{"query": " "}}); err != nil || !res.IsError {
		t.Errorf("search_tools with a blank query: %v %+v, want an error result", err, res)
	}

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "weather__forecast", Arguments: map[string]any{"city": "Bern"}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "the fake answers weather__forecast" {
		t.Fatalf("call of the found tool: %v %+v, want the fake's answer", err, res)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: CallToolName, Arguments: map[string]any{"name": "mail__send", "arguments": map[string]any{}}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "the fake answers mail__send" {
		t.Fatalf("call_tool mail__send: %v %+v, want the fake's answer", err, res)
	}
	fake.mu.Lock()
	calls := slices.Clone(fake.calls)
	fake.mu.Unlock()
	if want := []string{`weather__forecast {"city":"Bern"}`, `mail__send {}`}; !slices.Equal(calls, want) {
		t.Errorf("the fake was called %q, want %q", calls, want)
	}

	fake.remove("weather__forecast")
	p.toolsChanged()
	select {
	case <-changed:
	case <-time.After(testenv.WaitLimit()):
		t.Fatal("no tools/list_changed after the fake dropped a listed tool")
	}
	if got := listed(); slices.Contains(got, "weather__forecast") {
		t.Errorf("list after the fake dropped weather__forecast: %v, want it gone", got)
	}
}

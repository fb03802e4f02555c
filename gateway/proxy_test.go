package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/gateway/authn"
	"github.com/toolsift/toolsift/internal/pgtest"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/upstream"
)

// TestMain keeps the tool-list cache in a folder of this run, not the
// user's.
func TestMain(m *testing.M) {
	cache, err := os.MkdirTemp("", "toolsift-cache")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CACHE_HOME", cache)
	code := pgtest.Main(m) // store_bench_test.go's PostgreSQL, stopped here
	os.RemoveAll(cache)
	os.Exit(code)
}

// localTools are a small catalog of in-process tools: the upstream servers
// of most tests.
func localTools(t testing.TB) *config.Config {
	t.Helper()
	text := func(s string) func(context.Context, json.RawMessage) (string, error) {
		return func(context.Context, json.RawMessage) (string, error) { return s, nil }
	}
	math, err := upstream.LocalServer(
		upstream.LocalTool{Name: "add", Description: "Add two numbers and return their sum.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number","description":"First number"},"b":{"type":"number","description":"Second number"}},"required":["a","b"]}`),
			Handler: func(_ context.Context, args json.RawMessage) (string, error) {
				var a struct{ A, B float64 }
				if err := json.Unmarshal(args, &a); err != nil {
					return "", err
				}
				return fmt.Sprint(a.A + a.B), nil
			}},
		upstream.LocalTool{Name: "multiply", Description: "Multiply two numbers.", Handler: text("product")},
		upstream.LocalTool{Name: "divide", Description: "Divide one number by another.", Handler: func(context.Context, json.RawMessage) (string, error) {
			return "", fmt.Errorf("division by zero")
		}},
	)
	if err != nil {
		t.Fatal(err)
	}
	notes, err := upstream.LocalServer(
		upstream.LocalTool{Name: "create_note", Description: "Create a note with a title and a body.", Handler: text("created")},
		upstream.LocalTool{Name: "search_notes", Description: "Search notes by keyword.", Handler: text("found")},
	)
	if err != nil {
		t.Fatal(err)
	}
	weather, err := upstream.LocalServer(
		upstream.LocalTool{Name: "get_forecast", Description: "Get the weather forecast for a city.", Handler: text("sunny")},
		upstream.LocalTool{Name: "get_alerts", Description: "Get severe weather alerts for a region.", Handler: text("none")},
		upstream.LocalTool{Name: "send_email", Description: "Send an email message to a recipient.", Handler: text("sent")},
	)
	if err != nil {
		t.Fatal(err)
	}
	return &config.Config{Servers: map[string]config.Server{"math": math, "notes": notes, "weather": weather}}
}

// openToolset opens a Toolset over a Hub of cfg's servers, as gateway.Open
// does, closed with the test.
func openToolset(t *testing.T, cfg *config.Config) (*toolsift.Toolset, *upstream.Hub) {
	t.Helper()
	return openHubToolset(t, cfg, upstream.HubOptions{}, toolsift.Options{NoSemantic: true})
}

// openHubToolset opens a Toolset with to over a Hub of cfg's servers made
// with ho (a Memory store unless ho has one), closed with the test.
func openHubToolset(t testing.TB, cfg *config.Config, ho upstream.HubOptions, to toolsift.Options) (*toolsift.Toolset, *upstream.Hub) {
	t.Helper()
	if ho.Store == nil {
		ho.Store = store.NewMemory()
	}
	hub, err := upstream.NewHub(cfg, &ho)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := toolsift.OpenHub(context.Background(), hub, &to)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ts.Close() })
	return ts, hub
}

// client is a go-sdk client session with the tools/list_changed
// notifications it got.
type client struct {
	*mcp.ClientSession
	changed chan struct{}
}

func connect(t *testing.T, srv *mcp.Server, version string) *client {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	c := &client{changed: make(chan struct{}, 16)}
	cl := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case c.changed <- struct{}{}:
			default:
			}
		},
	})
	cs, err := cl.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	c.ClientSession = cs
	return c
}

func (c *client) names(t *testing.T) []string {
	t.Helper()
	res, err := c.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tl := range res.Tools {
		out = append(out, tl.Name)
	}
	slices.Sort(out)
	return out
}

// call calls a tool and returns its text and isError.
func (c *client) call(t *testing.T, name string, args any) (string, bool) {
	t.Helper()
	res, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool(%s): %v", name, err)
	}
	var b strings.Builder
	for _, ct := range res.Content {
		if tc, ok := ct.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

func (c *client) search(t *testing.T, query string, k int) think.SearchAnswer {
	t.Helper()
	text, isErr := c.call(t, "search_tools", map[string]any{"query": query, "k": k})
	if isErr {
		t.Fatalf("search_tools(%q): %s", query, text)
	}
	var ans think.SearchAnswer
	if err := json.Unmarshal([]byte(text), &ans); err != nil {
		t.Fatalf("search_tools(%q) = %s: %v", query, text, err)
	}
	return ans
}

// waitChanged waits for a tools/list_changed notification.
func (c *client) waitChanged(t *testing.T) {
	t.Helper()
	select {
	case <-c.changed:
	case <-time.After(testenv.WaitLimit()):
		t.Fatal("no notifications/tools/list_changed")
	}
}

func TestSearchListsFoundTools(t *testing.T) {
	// Both revisions: 2026-07-28 (server/discover, subscriptions/listen) and
	// the initialize handshake.
	for _, version := range []string{"2026-07-28", "2025-11-25", "2025-06-18"} {
		t.Run(version, func(t *testing.T) {
			ts, hub := openToolset(t, localTools(t))
			p, err := gateway.NewProxy(ts, hub, &gateway.ProxyOptions{PinnedServers: []string{"notes"}, PinnedTools: []string{"weather__get_*", "nope__nothing"}})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{`pinned tool "nope__nothing" matches no tool`}, p.Warnings()); diff != "" {
				t.Errorf("Warnings (-want +got):\n%s", diff)
			}
			c := connect(t, p.NewServer(), version)
			if got := c.InitializeResult(); got.ProtocolVersion != version {
				t.Errorf("protocol version %s, want %s", got.ProtocolVersion, version)
			}
			want := []string{"call_tool", "notes__create_note", "notes__search_notes", "search_tools", "weather__get_alerts", "weather__get_forecast"}
			if diff := cmp.Diff(want, c.names(t)); diff != "" {
				t.Fatalf("tools/list (-want +got):\n%s", diff)
			}

			ans := c.search(t, "add two numbers", 2)
			if len(ans.Tools) == 0 || ans.Tools[0].Name != "math__add" || ans.Tools[0].Server != "math" || ans.Tools[0].Score <= 0 || ans.Tokens <= 0 || !ans.Listed {
				t.Fatalf("search_tools(add two numbers) = %+v, want math__add first with a score and tokens", ans)
			}
			if !strings.Contains(string(ans.Tools[0].InputSchema), `"a"`) {
				t.Errorf("math__add's schema %s lacks its parameters", ans.Tools[0].InputSchema)
			}
			c.waitChanged(t)
			if got := c.names(t); !slices.Contains(got, "math__add") {
				t.Fatalf("after list_changed, tools/list = %v, want math__add in it", got)
			}
			if text, isErr := c.call(t, "math__add", map[string]any{"a": 17, "b": 25}); isErr || text != "42" {
				t.Errorf("math__add(17, 25) = %q (isError %v), want 42", text, isErr)
			}
			// call_tool reaches any tool, listed or not.
			if text, isErr := c.call(t, "call_tool", map[string]any{"name": "weather__send_email", "arguments": map[string]any{}}); isErr || text != "sent" {
				t.Errorf("call_tool(weather__send_email) = %q (isError %v), want sent", text, isErr)
			}
		})
	}
}

func TestCallErrors(t *testing.T) {
	ts, hub := openToolset(t, localTools(t))
	p, err := gateway.NewProxy(ts, hub, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := connect(t, p.NewServer(), "")
	tests := []struct {
		name string
		args any
		want []string
	}{
		{"unknown tool", map[string]any{"name": "math__sqrt"}, []string{"math__sqrt", "search_tools"}},
		{"tool's own failure", map[string]any{"name": "math__divide", "arguments": map[string]any{}}, []string{"division by zero"}},
		{"no name", map[string]any{}, []string{"name is empty"}},
		{"own tool", map[string]any{"name": "search_tools"}, []string{"call it directly"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, isErr := c.call(t, "call_tool", tt.args)
			if !isErr {
				t.Errorf("call_tool(%v) = %q, want isError", tt.args, text)
			}
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("call_tool(%v) = %q, want it to name %q", tt.args, text, w)
				}
			}
		})
	}
	for _, args := range []map[string]any{{"query": ""}, {"query": "x", "k": 99}} {
		if text, isErr := c.call(t, "search_tools", args); !isErr {
			t.Errorf("search_tools(%v) = %q, want isError", args, text)
		}
	}
}

// TestPinnedServerWithoutTools: an alwaysLoad server that failed is a
// warning naming it.
func TestPinnedServerWithoutTools(t *testing.T) {
	cfg := localTools(t)
	cfg.Servers["broken"] = config.Server{Command: "/nonexistent/toolsift-test-server"}
	ts, hub := openToolset(t, cfg)
	p, err := gateway.NewProxy(ts, hub, &gateway.ProxyOptions{PinnedServers: []string{"broken"}})
	if err != nil {
		t.Fatal(err)
	}
	if w := p.Warnings(); len(w) != 1 || !strings.Contains(w[0], `"broken"`) {
		t.Errorf("Warnings = %q, want one naming the server broken", w)
	}
}

func TestLeastRecentlyUsedLeaves(t *testing.T) {
	ts, hub := openToolset(t, localTools(t))
	// Room for two found tools besides search_tools and call_tool.
	p, err := gateway.NewProxy(ts, hub, &gateway.ProxyOptions{Search: gateway.SearchOptions{MaxTools: 4}})
	if err != nil {
		t.Fatal(err)
	}
	c := connect(t, p.NewServer(), "")
	find := func(query, want string) {
		t.Helper()
		ans := c.search(t, query, 1)
		if len(ans.Tools) != 1 || ans.Tools[0].Name != want {
			t.Fatalf("search_tools(%q) = %+v, want %s", query, ans.Tools, want)
		}
		c.waitChanged(t)
	}
	find("add two numbers", "math__add")
	find("weather forecast for a city", "weather__get_forecast")
	// Using add makes the forecast the least recently used.
	if text, _ := c.call(t, "math__add", map[string]any{"a": 1, "b": 2}); text != "3" {
		t.Fatalf("math__add(1, 2) = %q", text)
	}
	find("send an email", "weather__send_email")
	want := []string{"call_tool", "math__add", "search_tools", "weather__send_email"}
	if diff := cmp.Diff(want, c.names(t)); diff != "" {
		t.Errorf("tools/list (-want +got):\n%s", diff)
	}
	// More found at once than there is room for: the best stay.
	ans := c.search(t, "notes", 5)
	got := c.names(t)
	if len(got) != 4 || !slices.Contains(got, ans.Tools[0].Name) {
		t.Errorf("after finding %d tools, tools/list = %v, want 4 tools with the best, %s", len(ans.Tools), got, ans.Tools[0].Name)
	}
}

// TestSessionsHaveTheirOwnList: what one session finds is not on
// another's list.
func TestSessionsHaveTheirOwnList(t *testing.T) {
	ts, hub := openToolset(t, localTools(t))
	p, err := gateway.NewProxy(ts, hub, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, b := connect(t, p.NewServer(), ""), connect(t, p.NewServer(), "")
	a.search(t, "add two numbers", 1)
	a.waitChanged(t)
	b.search(t, "weather forecast", 1)
	b.waitChanged(t)
	if got := a.names(t); !slices.Contains(got, "math__add") || slices.Contains(got, "weather__get_forecast") {
		t.Errorf("session a lists %v", got)
	}
	if got := b.names(t); slices.Contains(got, "math__add") || !slices.Contains(got, "weather__get_forecast") {
		t.Errorf("session b lists %v", got)
	}
}

// TestSearchFitsBudget: a small budget compresses the schemas, a tiny one
// still answers with the best tool.
func TestSearchFitsBudget(t *testing.T) {
	ts, hub := openToolset(t, localTools(t))
	for _, budget := range []int{4000, 60, 1} {
		p, err := gateway.NewProxy(ts, hub, &gateway.ProxyOptions{Search: gateway.SearchOptions{Budget: budget}})
		if err != nil {
			t.Fatal(err)
		}
		ans, tools, err := p.Search(context.Background(), "add two numbers", 5)
		if err != nil {
			t.Fatal(err)
		}
		if len(ans.Tools) == 0 || ans.Tools[0].Name != "math__add" || len(tools) != len(ans.Tools) {
			t.Fatalf("budget %d: %+v, want math__add first", budget, ans)
		}
		if budget > 1 && ans.Tokens > budget {
			t.Errorf("budget %d: answer costs %d tokens", budget, ans.Tokens)
		}
		if budget == 4000 && (len(ans.Tools) != 5 || ans.Tools[0].Tier != "full") {
			t.Errorf("budget %d: %d tools, first at tier %s; want 5 at full", budget, len(ans.Tools), ans.Tools[0].Tier)
		}
		if budget < 4000 && len(ans.Omitted) == 0 {
			t.Errorf("budget %d: nothing omitted from %+v", budget, ans)
		}
	}
}

func TestOptions(t *testing.T) {
	ts, hub := openToolset(t, localTools(t))
	for _, o := range []gateway.ProxyOptions{{Search: gateway.SearchOptions{MaxTools: -1}}, {Search: gateway.SearchOptions{Budget: -1}}, {PinnedTools: []string{"["}}} {
		if _, err := gateway.NewProxy(ts, hub, &o); err == nil {
			t.Errorf("New(%+v) succeeded", o)
		}
	}
	if _, err := gateway.NewProxy(nil, nil, nil); err == nil {
		t.Error("New(nil) succeeded")
	}
	p, err := gateway.NewProxy(ts, hub, &gateway.ProxyOptions{Search: gateway.SearchOptions{MaxTools: 3}, PinnedServers: []string{"math"}})
	if err != nil {
		t.Fatal(err)
	}
	if w := p.Warnings(); len(w) != 1 || !strings.Contains(w[0], "no room") {
		t.Errorf("Warnings = %q, want one saying there is no room for found tools", w)
	}
}

// TestLogLines: one line per search and per call, with what they did, and
// never the arguments.
func TestLogLines(t *testing.T) {
	ts, hub := openToolset(t, localTools(t))
	var buf testenv.Buffer
	p, err := gateway.NewProxy(ts, hub, &gateway.ProxyOptions{Telemetry: gateway.Telemetry{Logger: slog.New(slog.NewJSONHandler(&buf, nil))}})
	if err != nil {
		t.Fatal(err)
	}
	c := connect(t, p.NewServer(), "")
	c.search(t, "add two numbers", 1)
	c.call(t, "call_tool", map[string]any{"name": "math__add", "arguments": map[string]any{"a": 123456, "b": 654321}})
	var lines []map[string]any
	for l := range strings.SplitSeq(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 2 {
		t.Fatalf("log = %s, want 2 lines", buf.String())
	}
	if s := lines[0]; s["msg"] != "search" || s["query"] != "add two numbers" || s["tokens"].(float64) <= 0 || !strings.HasPrefix(fmt.Sprint(s["tools"]), "[math__add=") {
		t.Errorf("search line = %v", s)
	}
	if s := lines[1]; s["msg"] != "call" || s["server"] != "math" || s["upstream_tool"] != "add" || s["outcome"] != "ok" || s["duration"] == nil {
		t.Errorf("call line = %v", s)
	}
	if strings.Contains(buf.String(), "123456") {
		t.Errorf("log holds the call's arguments: %s", buf.String())
	}
}

// TestHTTP: a go-sdk client of 2025-11-25 gets a session with its own
// list; with Stateless, a client of 2026-07-28 calls found tools through
// call_tool (TestBothWires has both on the default handler).
func TestHTTP(t *testing.T) {
	ts, hub := openToolset(t, localTools(t))
	for _, stateless := range []bool{false, true} {
		t.Run(fmt.Sprintf("stateless=%v", stateless), func(t *testing.T) {
			p, err := gateway.NewProxy(ts, hub, &gateway.ProxyOptions{Static: stateless})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(authn.Require(authn.SharedToken("tok"), nil)(p.Handler(&gateway.HTTPOptions{Stateless: stateless})))
			defer srv.Close()
			hc := srv.Client()
			hc.Transport = bearer{"tok", hc.Transport}
			c := &client{changed: make(chan struct{}, 16)}
			cl := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
				ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { c.changed <- struct{}{} },
			})
			want := map[bool]string{false: "2025-11-25", true: "2026-07-28"}[stateless]
			cs, err := cl.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: want})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			c.ClientSession = cs
			if got := cs.InitializeResult().ProtocolVersion; got != want {
				t.Errorf("protocol version %s, want %s", got, want)
			}
			ans := c.search(t, "add two numbers", 1)
			if len(ans.Tools) != 1 || ans.Tools[0].Name != "math__add" || ans.Listed == stateless {
				t.Fatalf("search_tools = %+v", ans)
			}
			if text, isErr := c.call(t, "call_tool", map[string]any{"name": "math__add", "arguments": map[string]any{"a": 40, "b": 2}}); isErr || text != "42" {
				t.Errorf("call_tool(math__add) = %q (isError %v)", text, isErr)
			}
			if !stateless {
				c.waitChanged(t)
			}
			if got := c.names(t); slices.Contains(got, "math__add") == stateless {
				t.Errorf("tools/list = %v", got)
			}
		})
	}
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// TestCancelReachesUpstream: a client that cancels its call makes the
// upstream server's handler see its ctx end.
func TestCancelReachesUpstream(t *testing.T) {
	started, cancelled := make(chan struct{}), make(chan struct{})
	slow, err := upstream.LocalServer(upstream.LocalTool{Name: "wait", Description: "Wait until cancelled.",
		Handler: func(ctx context.Context, _ json.RawMessage) (string, error) {
			close(started)
			<-ctx.Done()
			close(cancelled)
			return "", ctx.Err()
		}})
	if err != nil {
		t.Fatal(err)
	}
	ts, hub := openToolset(t, &config.Config{Servers: map[string]config.Server{"slow": slow}})
	p, err := gateway.NewProxy(ts, hub, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := connect(t, p.NewServer(), "2025-11-25")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "slow__wait"}})
		done <- err
	}()
	select {
	case <-started:
	case <-time.After(testenv.WaitLimit()):
		t.Fatal("the upstream tool never started")
	}
	cancel()
	select {
	case <-cancelled:
	case <-time.After(testenv.WaitLimit()):
		t.Fatal("the upstream tool's ctx did not end after the client cancelled")
	}
	if err := <-done; err == nil {
		t.Error("the cancelled call returned no error")
	}
}

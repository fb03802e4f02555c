package toolsift_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/toolindex"
	"github.com/toolsift/toolsift/upstream"
)

// TestOpenReportsBrokenServers: servers that cannot start, or lack an input
// value, are reported per server; Open succeeds with the others, and their
// tools are indexed by the time it returns.
func TestOpenReportsBrokenServers(t *testing.T) {
	dir := t.TempDir()
	cfg := `{
  // VS Code form, with an input nobody gave a value for
  "inputs": [{"type": "promptString", "id": "token", "description": "API token", "password": true}],
  "servers": {
    "missing": {"type": "stdio", "command": "/nonexistent/toolsift-no-such-server"},
    "needs-input": {"type": "stdio", "command": "node", "env": {"TOKEN": "${input:token}"}},
  },
}`
	path := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.WaitLimit())
	defer cancel()
	ts, err := toolsift.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	got := map[string]upstream.ServerStatus{}
	for _, st := range ts.Status() {
		got[st.Name] = st
	}
	if st := got["missing"]; st.State != upstream.StateFailed || st.Err == nil {
		t.Errorf("missing: %s %v; want failed with a reason", st.State, st.Err)
	}
	if st := got["needs-input"]; st.State != upstream.StateFailed || st.Err == nil || !strings.Contains(st.Err.Error(), "token") {
		t.Errorf("needs-input: %s %v; want failed naming the input", st.State, st.Err)
	}
	if len(ts.Tools()) != 0 {
		t.Errorf("tools %v from broken servers", ts.Tools())
	}
}

// TestOpenConfigLocalTools: local Go functions through an in-code config are
// listed, searched, chosen and called like any server's tools.
func TestOpenConfigLocalTools(t *testing.T) {
	local, err := upstream.LocalServer(
		upstream.LocalTool{Name: "add", Description: "Add two numbers and return the sum.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}}}`),
			Handler: func(_ context.Context, args json.RawMessage) (string, error) {
				var in struct{ A, B float64 }
				if err := json.Unmarshal(args, &in); err != nil {
					return "", err
				}
				return strconv.FormatFloat(in.A+in.B, 'f', -1, 64), nil
			}},
		upstream.LocalTool{Name: "greet", Description: "Say hello to someone.", Handler: func(context.Context, json.RawMessage) (string, error) { return "hello", nil }},
	)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ts, err := toolsift.OpenConfig(ctx, &config.Config{Servers: map[string]config.Server{"calc": local}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	if n := len(ts.Tools()); n != 2 {
		t.Fatalf("%d tools indexed when Open returned, want 2", n)
	}
	found, err := ts.Search(ctx, "sum of two numbers", 1)
	if err != nil || len(found) != 1 || found[0].Tool.Name != "calc__add" {
		t.Fatalf("Search = %v, %v; want calc__add", found, err)
	}
	off, err := ts.Think(ctx, think.Request{})
	if err != nil || !off.Everything || len(off.Tools) != 2 {
		t.Fatalf("Think = %+v, %v; want both tools (everything fits)", off, err)
	}
	res, err := ts.Call(ctx, "calc__add", json.RawMessage(`{"a":17,"b":25}`))
	if err != nil || res.Content != "42" {
		t.Fatalf("Call = %+v, %v; want 42", res, err)
	}
	if _, err := ts.Call(ctx, "calc__nope", nil); !errors.Is(err, tool.ErrUnknown) {
		t.Errorf("unknown tool: %v, want tool.ErrUnknown", err)
	}
	if err := ts.Refresh(ctx); err != nil {
		t.Errorf("Refresh: %v", err)
	}
}

func TestOpenRejects(t *testing.T) {
	ctx := context.Background()
	if _, err := toolsift.Open(ctx, filepath.Join(t.TempDir(), "none.json"), nil); !errors.Is(err, config.ErrInvalid) {
		t.Errorf("missing file: %v, want config.ErrInvalid", err)
	}
	if _, err := toolsift.OpenConfig(ctx, nil, &toolsift.Options{Encoding: "no-such-encoding"}); !errors.Is(err, toolsift.ErrOptions) {
		t.Errorf("bad encoding: %v, want ErrOptions", err)
	}
}

// TestBudgetAndK: the everyday knobs reach the Think step; beside a
// Thinker of one's own, which has its own, each is refused, naming it and
// the Thinker.
func TestBudgetAndK(t *testing.T) {
	ctx := context.Background()
	ts, err := toolsift.New(ctx, weatherTools(), &toolsift.Options{Store: store.NewMemory(), Budget: 123, K: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	ex, err := ts.Explain(ctx, think.Request{Query: retrieval.Query{Task: "weather in Bern"}})
	if err != nil {
		t.Fatal(err)
	}
	// The retriever ranks K and the packed tools beyond it (think.DefaultPack).
	if ex.Offer.Budget != 123 || ex.Budget != 123 || ex.Retrieval.K != 2+think.DefaultPack {
		t.Errorf("the Think step: Budget %d (%d), K+Pack %d; want 123 and 2+%d", ex.Offer.Budget, ex.Budget, ex.Retrieval.K, think.DefaultPack)
	}
	th, err := think.New(testenv.Index(t, nil, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	emb, err := toolindex.NewLocalEmbedder(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		o    toolsift.Options
		name string
	}{
		{toolsift.Options{Thinker: th, Budget: 100}, "Budget"},
		{toolsift.Options{Thinker: th, K: 3}, "K"},
		{toolsift.Options{Thinker: th, Encoding: "cl100k_base"}, "Encoding"},
		{toolsift.Options{Thinker: th, Embedder: emb}, "Embedder"},
		{toolsift.Options{Thinker: th, Semantic: emb}, "Semantic"},
		{toolsift.Options{Thinker: th, NoSemantic: true}, "NoSemantic"},
		{toolsift.Options{Budget: -1}, "Budget"},
		{toolsift.Options{K: -1}, "K"},
	} {
		bad.o.Store = store.NewMemory()
		_, err := toolsift.New(ctx, weatherTools(), &bad.o)
		if !errors.Is(err, toolsift.ErrOptions) || !strings.Contains(err.Error(), bad.name) || (bad.o.Thinker != nil && !strings.Contains(err.Error(), "Thinker")) {
			t.Errorf("%+v: %v, want ErrOptions naming %s (and the Thinker beside it)", bad.o, err, bad.name)
		}
	}
}

// TestThinker: a Toolset over a Thinker of one's own indexes into its
// index and thinks with its options; its pins and the Toolset's are both
// offered as pinned.
func TestThinker(t *testing.T) {
	ctx := context.Background()
	ix := testenv.Index(t, nil, nil)
	th, err := think.New(ix, &think.Options{Budget: 150, Search: think.SearchAlways, Retrieval: retrieval.Options{K: 1, Pinned: []string{"get_forecast"}}})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := toolsift.New(ctx, weatherTools(), &toolsift.Options{Thinker: th, Pin: []string{"send_email"}, Store: store.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	if ix.Len() != len(weatherTools()) {
		t.Errorf("the Thinker's index holds %d tools, want %d", ix.Len(), len(weatherTools()))
	}
	off, err := ts.Think(ctx, think.Request{Query: retrieval.Query{Task: "will it rain in Bern"}})
	if err != nil {
		t.Fatal(err)
	}
	reason := map[string]string{}
	for _, o := range off.Tools {
		reason[o.Tool.Name] = o.Reason
	}
	if reason["get_forecast"] != think.ReasonPinned || reason["send_email"] != think.ReasonPinned || !off.HasSearchTool() {
		t.Errorf("offered %v; want get_forecast (the Thinker's pin) and send_email (the Toolset's) pinned, and search_tools (SearchAlways)", reason)
	}
	if got := ts.Pinned(); !slices.Equal(got, []string{"get_forecast", "send_email"}) {
		t.Errorf("Pinned() = %v, want [get_forecast send_email]", got)
	}
}

func weatherTools() []tool.Tool {
	mk := func(name, desc string) tool.Tool {
		return tool.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}.WithHash()
	}
	return []tool.Tool{
		mk("get_weather", "Get the current weather for a city."),
		mk("get_forecast", "Get the weather forecast for the next days."),
		mk("send_email", "Send an email message to a recipient."),
	}
}

// TestNew: a Toolset over a list of tools lists, searches and thinks as one
// from Open does, and its Call says there is no server to call.
func TestNew(t *testing.T) {
	ctx := context.Background()
	ts, err := toolsift.New(ctx, weatherTools(), &toolsift.Options{Store: store.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	if n := len(ts.Tools()); n != 3 {
		t.Fatalf("%d tools, want 3", n)
	}
	found, err := ts.Search(ctx, "weather in Bern right now", 2)
	if err != nil || len(found) != 2 || found[0].Tool.Name != "get_weather" || found[0].Score <= found[1].Score {
		t.Fatalf("Search = %+v, %v; want get_weather first, scores descending", found, err)
	}
	off, err := ts.Think(ctx, think.Request{})
	if err != nil || !off.Everything || len(off.Tools) != 3 {
		t.Fatalf("Think = %+v, %v; want every tool (everything fits)", off, err)
	}
	if _, err := ts.Call(ctx, "get_weather", nil); !errors.Is(err, tool.ErrUnavailable) || !strings.Contains(err.Error(), "toolsift.New") {
		t.Errorf("Call of a listed tool: %v, want tool.ErrUnavailable naming toolsift.New", err)
	}
	if _, err := ts.Call(ctx, "nope", nil); !errors.Is(err, tool.ErrUnknown) {
		t.Errorf("Call of an unknown tool: %v, want tool.ErrUnknown", err)
	}
	if st := ts.Status(); st != nil {
		t.Errorf("Status = %v, want none", st)
	}
	if err := ts.Refresh(ctx); err != nil {
		t.Errorf("Refresh: %v", err)
	}
}

// TestSearch: the typed search takes any k from 1 (more than the catalog
// gives the catalog) and rejects what the Go caller got wrong with
// retrieval.ErrSearch; search_tools, its JSON form, keeps the model's rules
// and messages.
func TestSearch(t *testing.T) {
	ctx := context.Background()
	ts, err := toolsift.New(ctx, weatherTools(), &toolsift.Options{Store: store.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	if found, err := ts.Search(ctx, "weather", 50); err != nil || len(found) != 3 {
		t.Errorf("k=50 over 3 tools: %d found, %v; want 3", len(found), err)
	}
	for _, k := range []int{0, -1} {
		if _, err := ts.Search(ctx, "weather", k); !errors.Is(err, retrieval.ErrSearch) || errors.Is(err, think.ErrSearchArgs) {
			t.Errorf("k=%d: %v, want retrieval.ErrSearch", k, err)
		}
	}
	if _, err := ts.Search(ctx, "  ", 3); !errors.Is(err, retrieval.ErrSearch) {
		t.Errorf("empty query: %v, want retrieval.ErrSearch", err)
	}
	if _, _, err := ts.SearchTools(ctx, json.RawMessage(`{"query":"weather","k":50}`)); !errors.Is(err, think.ErrSearchArgs) || !strings.Contains(err.Error(), "want 1..20") {
		t.Errorf("search_tools k=50: %v, want the model's message", err)
	}
	text, found, err := ts.SearchTools(ctx, json.RawMessage(`{"query":"weather forecast"}`))
	if err != nil || len(found) != 3 || !strings.Contains(text, `"name":"get_forecast"`) {
		t.Errorf("search_tools = %s, %d found, %v; want the default k (5) over 3 tools", text, len(found), err)
	}
}

// TestStoreFolder: the Toolset owns the store and hands it to the Hub it
// makes: its derived data and the Hub's tool lists and trust records land
// in the folder of Options.Store.
func TestStoreFolder(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "cache")
	local, err := upstream.LocalServer(upstream.LocalTool{Name: "greet", Description: "Say hello to someone.",
		Handler: func(context.Context, json.RawMessage) (string, error) { return "hello", nil }})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := toolsift.OpenConfig(ctx, &config.Config{Servers: map[string]config.Server{"hi": local}}, &toolsift.Options{Store: dirStore(t, dir)})
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.Close(); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"vectors", "tokens", "trust"} {
		if _, err := os.Stat(filepath.Join(dir, sub)); err != nil {
			t.Errorf("the %s are not in the folder of Options.Store: %v", sub, err)
		}
	}
}

// TestOpenHub: a Toolset over a Hub of the caller's keeps its derived data
// in the Hub's store by default, owns the Hub (Close closes it), and
// refuses a Hub connected before, closing it: its changes would never
// reach the index.
func TestOpenHub(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "cache")
	local, err := upstream.LocalServer(upstream.LocalTool{Name: "greet", Description: "Say hello to someone.",
		Handler: func(context.Context, json.RawMessage) (string, error) { return "hello", nil }})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Servers: map[string]config.Server{"hi": local}}
	hub, err := upstream.NewHub(cfg, &upstream.HubOptions{Store: dirStore(t, dir)})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := toolsift.OpenHub(ctx, hub, &toolsift.Options{NoSemantic: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ts.Get("hi__greet"); !ok {
		t.Errorf("hi__greet not indexed when OpenHub returned: %v", ts.Tools())
	}
	if err := ts.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := hub.Call(ctx, "hi__greet", nil); !errors.Is(err, upstream.ErrClosed) {
		t.Errorf("Call on the Hub after Toolset.Close: %v, want upstream.ErrClosed", err)
	}
	for _, sub := range []string{"vectors", "tokens", "trust"} {
		if _, err := os.Stat(filepath.Join(dir, sub)); err != nil {
			t.Errorf("the %s are not in the Hub's store: %v", sub, err)
		}
	}

	connected, err := upstream.NewHub(cfg, &upstream.HubOptions{Store: store.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	if err := connected.Connect(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := toolsift.OpenHub(ctx, connected, &toolsift.Options{NoSemantic: true}); !errors.Is(err, upstream.ErrOptions) {
		t.Errorf("OpenHub over a connected Hub: %v, want upstream.ErrOptions", err)
	}
	if _, err := connected.Call(ctx, "hi__greet", nil); !errors.Is(err, upstream.ErrClosed) {
		t.Errorf("Call after a failed OpenHub: %v, want upstream.ErrClosed", err)
	}
	if _, err := toolsift.OpenHub(ctx, nil, nil); !errors.Is(err, toolsift.ErrOptions) {
		t.Errorf("OpenHub(nil): %v, want ErrOptions", err)
	}
}

// TestMemoryStoreKeepsNothing: over a Memory store nothing reaches the
// disk (the user's cache folder stays empty), the Hub's records stay in
// the store, and the vectors and token costs, which the index holds, are
// not copied into it.
func TestMemoryStoreKeepsNothing(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", home)
	t.Setenv("HOME", home)
	local, err := upstream.LocalServer(upstream.LocalTool{Name: "greet", Description: "Say hello to someone.",
		Handler: func(context.Context, json.RawMessage) (string, error) { return "hello", nil }})
	if err != nil {
		t.Fatal(err)
	}
	mem := store.NewMemory()
	ts, err := toolsift.OpenConfig(ctx, &config.Config{Servers: map[string]config.Server{"hi": local}}, &toolsift.Options{Store: mem, NoSemantic: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Search(ctx, "say hello", 1); err != nil {
		t.Fatal(err)
	}
	if err := ts.Close(); err != nil {
		t.Fatal(err)
	}
	keys, err := mem.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, "trust/") {
			t.Errorf("the memory store holds %s; want only the Hub's trust records", k)
		}
	}
	if len(keys) == 0 {
		t.Error("the memory store holds nothing: the Hub kept no trust record in it")
	}
	err = filepath.WalkDir(home, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			t.Errorf("%s written with a Memory store", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// failingStore is a Store whose writes fail (a full disk, a database gone
// read-only).
type failingStore struct{ store.Store }

func (failingStore) Put(context.Context, string, []byte) error {
	return errors.New("disk full")
}

// TestStoreWriteFails: a store that refuses writes does not break a run:
// Open, Search and Close work, and the failure is a warning.
func TestStoreWriteFails(t *testing.T) {
	ctx := context.Background()
	var log testenv.Buffer
	ts, err := toolsift.New(ctx, weatherTools(), &toolsift.Options{Store: failingStore{store.NewMemory()}, NoSemantic: true,
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if hits, err := ts.Search(ctx, "weather in Paris", 1); err != nil || len(hits) != 1 {
		t.Fatalf("Search = %v, %v", hits, err)
	}
	if err := ts.Close(); err != nil {
		t.Fatal(err)
	}
	if l := log.String(); !strings.Contains(l, "toolsift: cache") || !strings.Contains(l, "disk full") {
		t.Errorf("log %q: want the write failure", l)
	}
}

package toolsift_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/internal/dataset"
	"github.com/toolsift/toolsift/internal/usagekey"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/usage"
)

// learnCatalog is a catalog where a request ("remember that alice works at
// acme") does not find its tool (create_entities) in the top 5 by itself:
// the retrieval package's test tools and a reference server's.
func learnCatalog(t testing.TB) []tool.Tool {
	t.Helper()
	tools, err := dataset.LoadTools("retrieval/testdata/tools.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct{ name, desc string }{
		{"get-sum", "Returns the sum of two numbers"},
		{"echo", "Echoes back the input"},
		{"get-env", "Returns all environment variables, helpful for debugging MCP server configuration"},
		{"read_graph", "Read the entire knowledge graph"},
		{"create_entities", "Create multiple new entities in the knowledge graph"},
		{"read_text_file", "Read the complete contents of a file from the file system as text."},
		{"list_directory", "Get a detailed listing of all files and directories in a specified path."},
	} {
		tools = append(tools, tool.Tool{Name: x.name, Description: x.desc, InputSchema: json.RawMessage(`{"type":"object"}`)}.WithHash())
	}
	return tools
}

const (
	learnAsk   = "remember that alice works at acme"
	learnAgain = "keep in mind that alice is employed by acme"
	learnTool  = "create_entities"
)

func searchTop(t *testing.T, ts *toolsift.Toolset, ctx context.Context, query string, n int) []string {
	t.Helper()
	ms, err := ts.Search(ctx, query, n)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range ms {
		names = append(names, m.Tool.Name)
	}
	return names
}

// logBuffer is a Logger whose records a test reads.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestToolsetLearns: a call recorded for a request lifts its tool for a
// request like it, in other words, at Search, Select and Explain, for
// that caller's scope only; the memory is kept in the store and read again
// at the next Open; a bad value in the store is logged naming its key and
// loses nothing else; NoUsage learns nothing.
func TestToolsetLearns(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tools := learnCatalog(t)
	ts, err := toolsift.New(ctx, tools, &toolsift.Options{Store: dirStore(t, dir)})
	if err != nil {
		t.Fatal(err)
	}
	if got := searchTop(t, ts, ctx, learnAsk, 5); slices.Contains(got, learnTool) {
		t.Fatalf("before any call %q already finds %s in the top 5 (%v): the test shows nothing", learnAsk, learnTool, got)
	}
	team := usage.WithCaller(ctx, usage.Caller{Scope: "team a", Identity: "alice"})
	if err := ts.Record(team, retrieval.Query{Task: learnAgain}, learnTool); err != nil {
		t.Fatal(err)
	}
	if got := searchTop(t, ts, team, learnAsk, 3); len(got) == 0 || got[0] != learnTool {
		t.Errorf("after the call, Search(%q) = %v, want %s first", learnAsk, got, learnTool)
	}
	sel, err := ts.Select(team, []tool.Message{{Role: tool.RoleUser, Content: learnAsk}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(sel.Names(), learnTool) || sel.Query.Task != learnAsk {
		t.Errorf("Select offers %v for query %+v, want %s", sel.Names(), sel.Query, learnTool)
	}
	ex, err := ts.Explain(team, think.Request{Query: sel.Query}, learnTool)
	if err != nil {
		t.Fatal(err)
	}
	if tr := ex.Tools[0]; tr.Rank != 1 || tr.Usage.Calls != 1 {
		t.Errorf("Explain says of %s: rank %d, learned from %d calls; want rank 1, 1 call", learnTool, tr.Rank, tr.Usage.Calls)
	}
	if got := searchTop(t, ts, ctx, learnAsk, 5); slices.Contains(got, learnTool) {
		t.Errorf("another scope's Search = %v: it learned from team a's call", got)
	}
	for _, c := range []struct {
		q    retrieval.Query
		name string
	}{{retrieval.Query{Task: learnAsk}, "no_such_tool"}, {retrieval.Query{Task: "  "}, learnTool}} {
		if err := ts.Record(team, c.q, c.name); !errors.Is(err, retrieval.ErrRecord) {
			t.Errorf("Record(%+v, %q) = %v, want ErrRecord", c.q, c.name, err)
		}
	}
	if err := ts.Close(); err != nil {
		t.Fatal(err)
	}

	// Kept: the next Open knows it; a damaged scope beside it is logged
	// naming its key.
	st := dirStore(t, dir)
	if _, err := st.Get(ctx, usagekey.Key("team a")); err != nil {
		t.Fatalf("the usage memory is not in the store after Close: %v", err)
	}
	if err := st.Put(ctx, usagekey.Key("team b"), []byte("damaged")); err != nil {
		t.Fatal(err)
	}
	var logs logBuffer
	again, err := toolsift.New(ctx, tools, &toolsift.Options{Store: st, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if got := searchTop(t, again, team, learnAsk, 3); len(got) == 0 || got[0] != learnTool {
		t.Errorf("after a restart, Search(%q) = %v, want %s first", learnAsk, got, learnTool)
	}
	if l := logs.String(); !strings.Contains(l, usagekey.Key("team b")) || !strings.Contains(l, "level=ERROR") {
		t.Errorf("a damaged scope was not logged as an error naming its key; the log:\n%s", l)
	}

	// NoUsage: nothing learned, nothing written.
	off, err := toolsift.New(ctx, tools, &toolsift.Options{Store: store.NewMemory(), NoUsage: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := off.Record(team, retrieval.Query{Task: learnAgain}, learnTool); err != nil {
		t.Errorf("Record with NoUsage: %v", err)
	}
	if got := searchTop(t, off, team, learnAsk, 5); slices.Contains(got, learnTool) {
		t.Errorf("with NoUsage, Search = %v: it learned", got)
	}
	off.Close()
}

// Two Toolsets on one folder (two processes' worth) each record a call:
// each write takes what the store holds, so that neither loses the
// other's, and a third Toolset opened after finds both.
func TestToolsetUsageSharedStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tools := learnCatalog(t)
	open := func() *toolsift.Toolset {
		ts, err := toolsift.New(ctx, tools, &toolsift.Options{Store: dirStore(t, dir)})
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	a, b := open(), open()
	alice := usage.WithCaller(ctx, usage.Caller{Identity: "alice"})
	bob := usage.WithCaller(ctx, usage.Caller{Identity: "bob"})
	if err := a.Record(alice, retrieval.Query{Task: learnAgain}, learnTool); err != nil {
		t.Fatal(err)
	}
	if err := b.Record(bob, retrieval.Query{Task: "add 2 and 3 for me"}, "get-sum"); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := dirStore(t, dir).Get(ctx, usagekey.Key(""))
	if err != nil {
		t.Fatal(err)
	}
	mem, err := usage.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := mem.Merge("", data); err != nil {
		t.Fatal(err)
	}
	var got []string
	for e := range mem.Entries("") {
		got = append(got, e.Identity+" "+e.Tool)
	}
	if want := []string{"alice " + learnTool, "bob get-sum"}; !slices.Equal(slices.Sorted(slices.Values(got)), want) {
		t.Errorf("the store holds %v, want %v", got, want)
	}
	c := open()
	defer c.Close()
	if got := searchTop(t, c, alice, learnAsk, 3); len(got) == 0 || got[0] != learnTool {
		t.Errorf("a third Toolset: Search(%q) = %v, want %s first", learnAsk, got, learnTool)
	}
}

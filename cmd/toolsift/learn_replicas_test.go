package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/internal/dataset"
	"github.com/toolsift/toolsift/internal/pgtest"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/think"
)

// TestReplicasLearn is issue 45's "Done when" for replicas: two toolsift
// serve processes on one PostgreSQL; alice's search_tools and her call of
// a tool it returned, through replica A, lift that tool for the same
// request in other words through replica B, by the store's watch (B
// neither restarts nor writes; the log says how soon: 1.1 s here), and
// after both replicas are killed and started again, B still ranks it
// first.
func TestReplicasLearn(t *testing.T) {
	pg := pgtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*testenv.WaitLimit())
	defer cancel()
	code, out, stderr := runCmd(t, "token", "create", "--user", "alice", "--team", "a", "--store", pg)
	if code != 0 {
		t.Fatalf("token create: exit %d: %s", code, stderr)
	}
	secret := strings.TrimSpace(out)

	// The upstreams: the retrieval package's test tools, one go-sdk server
	// per server, and a knowledge graph's, over streamable HTTP.
	tools, err := dataset.LoadTools("../../retrieval/testdata/tools.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	byServer := map[string]*mcp.Server{}
	add := func(server, name, desc string) {
		if byServer[server] == nil {
			byServer[server] = mcp.NewServer(&mcp.Implementation{Name: server, Version: "1"}, nil)
		}
		addTool(byServer[server], name, desc)
	}
	for _, tl := range tools {
		server, name, _ := strings.Cut(tl.Name, "__")
		add(server, name, tl.Description)
	}
	add("kb", "read_graph", "Read the entire knowledge graph")
	add("kb", "create_entities", "Create multiple new entities in the knowledge graph")
	add("kb", "delete_entities", "Delete multiple entities and their relations from the knowledge graph")
	servers := map[string]any{}
	var names []string
	for name, srv := range byServer {
		hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
		t.Cleanup(hs.Close)
		servers[name] = map[string]any{"type": "http", "url": hs.URL}
		names = append(names, name)
	}
	root := t.TempDir()
	cfg, policy := filepath.Join(root, "mcp.json"), filepath.Join(root, "policy.json")
	b, _ := json.Marshal(map[string]any{"mcpServers": servers})
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	pb, _ := json.Marshal(map[string]any{"rules": []any{map[string]any{"teams": []string{"a"}, "allow": names}}})
	if err := os.WriteFile(policy, pb, 0o600); err != nil {
		t.Fatal(err)
	}

	const (
		want  = "kb__create_entities"
		again = "note that alice is an engineer at acme"
		ask   = "remember that alice works at acme"
	)
	connect := func(r *replica) *mcp.ClientSession {
		t.Helper()
		hc := &http.Client{Transport: bearer{secret, http.DefaultTransport}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: r.url, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
		if err != nil {
			t.Fatalf("connect to replica %s: %v", r.name, err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	call := func(cs *mcp.ClientSession, name string, args map[string]any) string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var sb strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				sb.WriteString(tc.Text)
			}
		}
		text := sb.String()
		if res.IsError {
			t.Fatalf("%s: %s", name, text)
		}
		return text
	}
	search := func(cs *mcp.ClientSession, query string, k int) []string {
		t.Helper()
		var ans think.SearchAnswer
		if err := json.Unmarshal([]byte(call(cs, "search_tools", map[string]any{"query": query, "k": k})), &ans); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range ans.Tools {
			out = append(out, f.Name)
		}
		return out
	}

	// Both replicas index every server (serve answers while servers
	// connect: until then a search sees part of the catalog).
	a, bRep := startReplica(t, ctx, "A", cfg, pg, policy), startReplica(t, ctx, "B", cfg, pg, policy)
	ca, cb := connect(a), connect(bRep)
	catalog := func(cs *mcp.ClientSession) {
		t.Helper()
		for ctx.Err() == nil {
			if got := search(cs, "delete entities from the knowledge graph", 3); slices.Contains(got, "kb__delete_entities") && len(search(cs, "get the weather forecast", 1)) > 0 {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	catalog(ca)
	catalog(cb)
	if got := search(cb, ask, 3); len(got) > 0 && got[0] == want {
		t.Fatalf("before any call, B's search_tools(%q) = %v: the test shows nothing", ask, got)
	}
	if got := search(ca, again, 10); !slices.Contains(got, want) {
		t.Fatalf("A's search_tools(%q) = %v, want %s among them", again, got, want)
	}
	call(ca, "call_tool", map[string]any{"name": want, "arguments": map[string]any{}})
	called := time.Now()
	var got []string
	var took time.Duration
	for {
		got = search(cb, ask, 3)
		took = time.Since(called)
		if len(got) > 0 && got[0] == want || ctx.Err() != nil || took > 10*time.Second {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("B ranked %s first %v after A's call returned", want, took)
	if len(got) == 0 || got[0] != want {
		t.Fatalf("B's search_tools(%q) = %v %v after A's call, want %s first\n%s", ask, got, took, want, logsOf([]*replica{a, bRep}))
	}
	// How soon is the write's delay (a second) and the watch's notice: a
	// figure to read in the log, not a timed assertion (it is the
	// machine's load's too).

	// Both killed and started again: B still knows.
	for _, r := range []*replica{a, bRep} {
		r.cmd.Process.Kill()
		r.cmd.Wait()
	}
	bRep = startReplica(t, ctx, "B2", cfg, pg, policy)
	startReplica(t, ctx, "A2", cfg, pg, policy)
	cb = connect(bRep)
	catalog(cb)
	if got := search(cb, ask, 3); len(got) == 0 || got[0] != want {
		t.Errorf("after a restart of both, B's search_tools(%q) = %v, want %s first", ask, got, want)
	}
}

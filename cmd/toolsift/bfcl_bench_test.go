//go:build unix

package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/gateway/authn"
	"github.com/toolsift/toolsift/think"
)

// The BFCL benchmarks run toolsift serve's proxy in this process over
// BFCL's 2,574 tools (toolbench's embedded copy, so they run on a clean
// clone), served by a stub go-sdk server over streamable HTTP on loopback,
// and drive it with go-sdk clients over streamable HTTP, each with its own
// session (issue 34). $TOOLSIFT_BENCH_CACHE_DIR keeps the vectors between
// runs (otherwise a fresh cache: the first run embeds every tool);
// $TOOLSIFT_BENCH_BFCL_COPIES=N serves the catalog N times, from N stub
// servers (bfcl, bfcl2, ...; a server keeps at most 5,000 tools): the same
// benchmark at 10,000 tools and more.
//
//	go test -run '^$' -bench BFCL -benchtime 2000x ./cmd/toolsift/

// bfclTool is one line of cmd/toolbench/data/bfcl/tools.jsonl.gz.
type bfclTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

func readGzipLines[T any](b testing.TB, path string) []T {
	b.Helper()
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		b.Fatal(err)
	}
	var out []T
	sc := bufio.NewScanner(z)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			b.Fatal(err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	return out
}

// bfclUpstream is the stub MCP server: every BFCL tool, answering a call
// with a short text, over streamable HTTP.
func bfclUpstream(b testing.TB) (url string, tools []bfclTool) {
	tools = readGzipLines[bfclTool](b, "../toolbench/data/bfcl/tools.jsonl.gz")
	srv := mcp.NewServer(&mcp.Implementation{Name: "bfcl-stub", Version: "1"}, nil)
	answer := func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok: " + req.Params.Name}}}, nil
	}
	for _, t := range tools {
		schema := t.InputSchema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		srv.AddTool(&mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: schema}, answer)
	}
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	b.Cleanup(hs.Close)
	return hs.URL, tools
}

// bfclProxy is the gateway's Toolset over the stub, and the gateway's
// HTTP endpoint.
func bfclProxy(b testing.TB, upstream string) (*toolsift.Toolset, string) {
	cache := os.Getenv("TOOLSIFT_BENCH_CACHE_DIR")
	if cache == "" {
		cache = b.TempDir()
	}
	cfg := &config.Config{Servers: map[string]config.Server{"bfcl": {URL: upstream, Type: "http"}}}
	if n, _ := strconv.Atoi(os.Getenv("TOOLSIFT_BENCH_BFCL_COPIES")); n > 1 {
		for i := 2; i <= n; i++ {
			cfg.Servers[fmt.Sprintf("bfcl%d", i)] = config.Server{URL: upstream, Type: "http"}
		}
	}
	gw, err := gateway.Open(context.Background(), cfg, &gateway.Options{Toolset: toolsift.Options{Store: storeIn(b, cache)}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { gw.Close() })
	srv := httptest.NewServer(authn.Require(authn.SharedToken("t"), nil)(gw.Handler()))
	b.Cleanup(srv.Close)
	return gw.Toolset(), srv.URL
}

func httpClient(b testing.TB, endpoint, token string) *mcp.ClientSession {
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	hc.Transport.(*http.Transport).MaxIdleConnsPerHost = 128
	if token != "" {
		hc.Transport = bearer{token, hc.Transport}
	}
	return benchClient(b, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc})
}

// BenchmarkBFCL measures the gateway over BFCL's catalog: search_tools
// from 8 and 64 concurrent HTTP clients (searches/s, p50/p99 as a client
// sees it, CPU ms and allocations per search: of the whole process,
// clients included), think.Thinker.Find alone (what answers search_tools,
// without MCP or HTTP), and a tool call straight to the stub (direct) and
// through the gateway by name (proxy): proxy minus direct is what the
// gateway adds to a call.
//
// The searches of search-http (the headline) and search-inproc are
// distinct texts: BFCL's 2,351 queries, shuffled once (the same order in
// every run), taken in turn across the sub-benchmarks, after a warm-up
// that searched each once (budget's rendered tiers warm, as in a proxy
// that has served a while); the query vectors' cache (retrieval) keeps
// only the most recent, so each query of a timed run is encoded as long
// as the sub-benchmarks' searches stay below about 1,500 in all
// (-benchtime 600x). search-http-repeat/clients=8 cycles over the first
// 64 of them, searched once before: every query vector comes from that
// cache, as for an agent that repeats its task.
func BenchmarkBFCL(b *testing.B) {
	upstream, tools := bfclUpstream(b)
	ts, endpoint := bfclProxy(b, upstream)
	type query struct{ Query string }
	var queries []string
	for _, q := range readGzipLines[query](b, "../toolbench/data/bfcl/queries.jsonl.gz") {
		queries = append(queries, q.Query)
	}
	// The file is in BFCL's categories' order, whose lengths differ (its
	// queries 601 to 1,201, search-http/clients=8's, average 47 words;
	// those of search-inproc and clients=64, 15 and 19): shuffled, every
	// sub-benchmark searches the same mix, and their figures compare.
	rand.New(rand.NewPCG(34, 34)).Shuffle(len(queries), func(i, j int) { queries[i], queries[j] = queries[j], queries[i] })
	for _, q := range queries {
		if _, _, err := ts.Find(context.Background(), q, 5, think.DefaultBudget, nil); err != nil {
			b.Fatal(err)
		}
	}
	// next is the next distinct query, across the sub-benchmarks.
	var next atomic.Int64
	distinct := func() string { return queries[int(next.Add(1)-1)%len(queries)] }
	b.Run("search-inproc", func(b *testing.B) {
		b.ReportAllocs()
		cpu := cpuSeconds()
		for b.Loop() {
			if _, _, err := ts.Find(context.Background(), distinct(), 5, think.DefaultBudget, nil); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric((cpuSeconds()-cpu)*1000/float64(b.N), "cpu-ms/op")
		b.ReportMetric(float64(len(ts.Tools())), "tools")
	})
	searchHTTP := func(b *testing.B, clients int, query func(n int) string) {
		sessions := make([]*mcp.ClientSession, clients)
		for i := range sessions {
			sessions[i] = httpClient(b, endpoint, "t")
			benchCall(b, sessions[i], "search_tools", map[string]any{"query": queries[i%64]})
		}
		took := make([]time.Duration, b.N)
		var done atomic.Int64
		b.ReportAllocs()
		b.ResetTimer()
		cpu := cpuSeconds()
		start := time.Now()
		var wg sync.WaitGroup
		for _, cs := range sessions {
			wg.Go(func() {
				for {
					n := int(done.Add(1)) - 1
					if n >= b.N {
						return
					}
					q := query(n)
					t0 := time.Now()
					benchCall(b, cs, "search_tools", map[string]any{"query": q})
					took[n] = time.Since(t0)
				}
			})
		}
		wg.Wait()
		wall := time.Since(start)
		b.StopTimer()
		b.ReportMetric((cpuSeconds()-cpu)*1000/float64(b.N), "cpu-ms/op")
		b.ReportMetric(float64(b.N)/wall.Seconds(), "searches/s")
		slices.Sort(took)
		at := func(q float64) float64 { return float64(took[int(q*float64(len(took)-1))].Microseconds()) / 1000 }
		b.ReportMetric(at(0.5), "p50-ms")
		b.ReportMetric(at(0.99), "p99-ms")
	}
	for _, clients := range []int{8, 64} {
		b.Run(fmt.Sprintf("search-http/clients=%d", clients), func(b *testing.B) {
			searchHTTP(b, clients, func(int) string { return distinct() })
		})
	}
	b.Run("search-http-repeat/clients=8", func(b *testing.B) {
		for _, q := range queries[:64] {
			if _, _, err := ts.Find(context.Background(), q, 5, think.DefaultBudget, nil); err != nil {
				b.Fatal(err)
			}
		}
		searchHTTP(b, 8, func(n int) string { return queries[n%64] })
	})
	// A call with BFCL's first tool's arguments: the stub does not read them.
	name := tools[0].Name
	args := map[string]any{"base": 10, "height": 5}
	calls := func(b *testing.B, cs *mcp.ClientSession, name string, args any) {
		benchCall(b, cs, name, args)
		took := make([]time.Duration, 0, b.N)
		b.ReportAllocs()
		for b.Loop() {
			t0 := time.Now()
			benchCall(b, cs, name, args)
			took = append(took, time.Since(t0))
		}
		slices.Sort(took)
		at := func(q float64) float64 { return float64(took[int(q*float64(len(took)-1))].Microseconds()) / 1000 }
		b.ReportMetric(at(0.5), "p50-ms")
		b.ReportMetric(at(0.99), "p99-ms")
	}
	b.Run("call/direct", func(b *testing.B) {
		calls(b, httpClient(b, upstream, ""), name, args)
	})
	b.Run("call/proxy", func(b *testing.B) {
		cs := httpClient(b, endpoint, "t")
		benchCall(b, cs, "search_tools", map[string]any{"query": "area of a triangle"}) // lists it
		calls(b, cs, "bfcl__"+name, args)
	})
	b.Run("call/call_tool", func(b *testing.B) {
		calls(b, httpClient(b, endpoint, "t"), "call_tool", map[string]any{"name": "bfcl__" + name, "arguments": args})
	})
}

// TestBFCLAnswers writes, when $TOOLSIFT_BFCL_ANSWERS names a file, what one
// HTTP client sees for each of BFCL's first 500 queries: the search_tools
// answer and then its tool list (the definitions listed). Comparing the file
// before and after a change to the serving path shows that rankings,
// budgets and listed definitions stayed byte for byte the same.
//
// With $TOOLSIFT_BFCL_ANSWERS_CLIENTS=N (N > 1), N clients search at once
// (query i by client i mod N, so that the gateway encodes queries
// together) and the file holds each query and its answer, in order,
// without tool lists: the same as the lines of the one client's file that
// hold queries and answers.
func TestBFCLAnswers(t *testing.T) {
	if n, _ := strconv.Atoi(os.Getenv("TOOLSIFT_BFCL_ANSWERS_CLIENTS")); n > 1 {
		bfclAnswersConcurrent(t, n)
		return
	}
	out := os.Getenv("TOOLSIFT_BFCL_ANSWERS")
	if out == "" {
		t.Skip("set TOOLSIFT_BFCL_ANSWERS to a file to write the answers to")
	}
	upstream, _ := bfclUpstream(t)
	_, endpoint := bfclProxy(t, upstream)
	type query struct{ Query string }
	qs := readGzipLines[query](t, "../toolbench/data/bfcl/queries.jsonl.gz")
	cs := httpClient(t, endpoint, "t")
	var buf bytes.Buffer
	for _, q := range qs[:min(len(qs), 500)] {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": q.Query}})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&buf, "%s\n%s\n", q.Query, res.Content[0].(*mcp.TextContent).Text)
		lt, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range lt.Tools {
			j, err := json.Marshal(tl)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&buf, "%s\n", j)
		}
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// bfclAnswersConcurrent is TestBFCLAnswers with clients at once.
func bfclAnswersConcurrent(t *testing.T, clients int) {
	out := os.Getenv("TOOLSIFT_BFCL_ANSWERS")
	if out == "" {
		t.Fatal("TOOLSIFT_BFCL_ANSWERS_CLIENTS without TOOLSIFT_BFCL_ANSWERS")
	}
	upstream, _ := bfclUpstream(t)
	_, endpoint := bfclProxy(t, upstream)
	type query struct{ Query string }
	qs := readGzipLines[query](t, "../toolbench/data/bfcl/queries.jsonl.gz")
	qs = qs[:min(len(qs), 500)]
	answers := make([]string, len(qs))
	var wg sync.WaitGroup
	for c := range clients {
		cs := httpClient(t, endpoint, "t")
		wg.Go(func() {
			for i := c; i < len(qs); i += clients {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": qs[i].Query}})
				if err != nil {
					t.Error(err)
					return
				}
				answers[i] = res.Content[0].(*mcp.TextContent).Text
			}
		})
	}
	wg.Wait()
	var buf bytes.Buffer
	for i, q := range qs {
		fmt.Fprintf(&buf, "%s\n%s\n", q.Query, answers[i])
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEvalJSON(t *testing.T) {
	dir := t.TempDir()
	rankings := filepath.Join(dir, "rankings.jsonl")
	plot := filepath.Join(dir, "plot.svg")
	code, stdout, stderr := runToolbench(t, "eval", "--tools", "testdata/tools.jsonl", "--queries", "testdata/queries.jsonl",
		"--k", "5,1,3", "--mode", "hybrid,lexical", "--budget", "150", "--json", "--rankings", rankings, "--plot", plot)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	var rep evalReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout)
	}
	if rep.Tools != 6 || rep.Queries != 5 {
		t.Errorf("tools, queries = %d, %d; want 6, 5", rep.Tools, rep.Queries)
	}
	if diff := cmp.Diff([]skipped{{ID: "q6", Missing: []string{"book_restaurant"}}}, rep.Skipped); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
	if len(rep.Runs) != 2 || rep.Runs[0].Mode != "hybrid" || rep.Runs[1].Mode != "lexical" {
		t.Fatalf("runs = %+v, want hybrid then lexical", rep.Runs)
	}
	for _, r := range rep.Runs {
		var ks []int
		for _, a := range r.AtK {
			ks = append(ks, a.K)
			if a.Recall < 0 || a.Recall > 1 || a.Hit < a.Complete {
				t.Errorf("%s@%d: implausible recall %v hit %v complete %v", r.Mode, a.K, a.Recall, a.Hit, a.Complete)
			}
		}
		if diff := cmp.Diff([]int{1, 3, 5}, ks); diff != "" {
			t.Errorf("%s: k values (-want +got):\n%s", r.Mode, diff)
		}
		// Six clearly different tools: every query's gold is in the top 5.
		if got := r.AtK[2].Recall; got != 1 {
			t.Errorf("%s recall@5 = %v, want 1", r.Mode, got)
		}
		if r.Select.MeanTokens > 150 || r.Select.MeanTokens <= 0 {
			t.Errorf("%s: mean selected tokens %v, want in (0, 150]", r.Mode, r.Select.MeanTokens)
		}
		if r.Select.Reduction <= 0 || r.Select.Reduction >= 1 {
			t.Errorf("%s: reduction %v", r.Mode, r.Select.Reduction)
		}
	}
	if rep.AllToolsTokens < 200 {
		t.Errorf("all tools cost %d tokens, implausibly few", rep.AllToolsTokens)
	}

	b, err := os.ReadFile(rankings)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 10 {
		t.Fatalf("rankings has %d lines, want 10 (5 queries × 2 modes)", len(lines))
	}
	var first rankingLine
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	if first.ID != "q1" || first.Mode != "hybrid" || len(first.Ranked) != 6 || first.Ranked[0] != "get_weather" || first.SelectedTokens > 150 {
		t.Errorf("first rankings line = %+v", first)
	}

	svg, err := os.ReadFile(plot)
	if err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(svg, new(struct{})); err != nil {
		t.Errorf("plot is not well-formed XML: %v", err)
	}
	if !bytes.Contains(svg, []byte("lexical recall@3")) {
		t.Errorf("plot lacks the lexical series")
	}
}

// TestEvalListing: --listing lists the tools a step's schemas leave out,
// and the report counts the gold sent with its schema apart from the gold
// sent only listed; without it (the default) or with --no-listing, every
// tool sent has its schema.
func TestEvalListing(t *testing.T) {
	eval := func(flags ...string) selStats {
		t.Helper()
		args := append([]string{"eval", "--tools", "testdata/tools.jsonl", "--queries", "testdata/queries.jsonl", "--mode", "hybrid", "--budget", "250", "--json"}, flags...)
		code, stdout, stderr := runToolbench(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d, stderr:\n%s", flags, code, stderr)
		}
		var rep evalReport
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatal(err)
		}
		s := rep.Runs[0].Select
		if d := s.RecallSchema + s.RecallListed - s.Recall; d > 1e-9 || d < -1e-9 || s.MeanTokens > 250 {
			t.Errorf("%v: with schema %v + listed %v, recall %v, %v tokens; want the sum, within 250", flags, s.RecallSchema, s.RecallListed, s.Recall, s.MeanTokens)
		}
		return s
	}
	plain, listed := eval(), eval("--listing")
	if plain.MeanListed != 0 || plain.RecallListed != 0 {
		t.Errorf("default: %v listed, gold listed %v; want none", plain.MeanListed, plain.RecallListed)
	}
	// Listings take their room from the lowest-scored schemas: here a
	// gold tool the default sends with its schema is only listed.
	if listed.MeanListed == 0 || listed.RecallListed == 0 || listed.MeanTools <= plain.MeanTools || listed.RecallSchema > plain.RecallSchema {
		t.Errorf("--listing: %v tools, %v listed, gold %v with schema + %v listed; want more tools than the default's %v, some gold listed, no more with its schema than %v",
			listed.MeanTools, listed.MeanListed, listed.RecallSchema, listed.RecallListed, plain.MeanTools, plain.RecallSchema)
	}
	if both := eval("--listing", "--no-listing"); both != plain {
		t.Errorf("--listing --no-listing: %+v; want the default's %+v", both, plain)
	}
	code, stdout, stderr := runToolbench(t, "eval", "--tools", "testdata/tools.jsonl", "--queries", "testdata/queries.jsonl", "--mode", "hybrid", "--budget", "250", "--listing")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	for _, want := range []string{"of them listed", "gold with schema", "gold listed", "gold recall"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
}

func TestEvalText(t *testing.T) {
	code, stdout, stderr := runToolbench(t, "eval", "--tools", "testdata/tools.jsonl", "--queries", "testdata/queries.jsonl")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	for _, want := range []string{"recall@1", "recall@10", "nDCG@10", "hybrid", "reduction", "6 tools, 5 queries (1 skipped"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "skipped query q6: gold not in the catalog: book_restaurant") {
		t.Errorf("stderr does not report the skipped query:\n%s", stderr)
	}
}

func TestEvalErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte("{\"name\":\"a\"}\n{\"name\": 3}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"bad line", []string{"eval", "--tools", bad, "--queries", "testdata/queries.jsonl"}, 1, bad + ":2:"},
		{"missing file", []string{"eval", "--tools", filepath.Join(dir, "nope.jsonl"), "--queries", "testdata/queries.jsonl"}, 1, "nope.jsonl"},
		// Usage errors: the reason, then the usage, exit 2.
		{"no queries", []string{"eval", "--tools", "testdata/tools.jsonl"}, 2, "toolbench eval: --queries is required with --tools or --config\n\nUsage: toolbench eval"},
		{"bad k", []string{"eval", "--k", "1,x"}, 2, `toolbench eval: --k: "x" is not a positive whole number`},
		{"bad mode", []string{"eval", "--mode", "frob"}, 2, `toolbench eval: --mode: unknown mode "frob"`},
		{"bad semantic", []string{"eval", "--semantic", "frob"}, 2, `toolbench eval: --semantic "frob": want use, none, model2vec:DIR or openai`},
		{"model2vec without a folder", []string{"eval", "--semantic", "model2vec:"}, 2, `toolbench eval: --semantic model2vec: needs the model's directory`},
		{"semantic mode without one", []string{"eval", "--mode", "semantic", "--semantic", "none"}, 2, `toolbench eval: --mode semantic needs a semantic encoder`},
		{"removed embedder", []string{"eval", "--embedder", "local+use"}, 2, `toolbench eval: --embedder "local+use": want local, use or openai`},
		{"bad flag", []string{"eval", "--nope"}, 2, "toolbench eval: unknown flag --nope\n"},
		{"bad budget", []string{"eval", "--budget", "0"}, 2, "toolbench eval: --budget 0: want a positive number of tokens"},
		{"bad embedder", []string{"eval", "--embedder", "bert"}, 2, `toolbench eval: --embedder "bert": want local`},
		{"both sources", []string{"eval", "--tools", "t", "--config", "c", "--queries", "q"}, 2, "--tools and --config are exclusive"},
		{"extra argument", []string{"eval", "now"}, 2, `toolbench eval: unexpected argument "now"`},
		{"openai without endpoint", []string{"eval", "--tools", "testdata/tools.jsonl", "--queries", "testdata/queries.jsonl", "--embedder", "openai"}, 1, "OPENAI_API_KEY"},
		{"unknown encoding", []string{"eval", "--tools", "testdata/tools.jsonl", "--queries", "testdata/queries.jsonl", "--encoding", "nope_base"}, 1, "nope_base"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runToolbench(t, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, tt.code, tt.want)
			}
		})
	}
}

func TestDefaultDataset(t *testing.T) {
	tools, queries, err := loadDefaultData()
	if err != nil {
		t.Fatal(err)
	}
	// meta.json's counts.
	if len(tools) != 2574 || len(queries) != 2351 {
		t.Errorf("embedded dataset has %d tools and %d queries, want 2574 and 2351", len(tools), len(queries))
	}
	for _, f := range []string{"data/bfcl/LICENSE", "data/bfcl/NOTICE"} {
		if _, err := defaultData.ReadFile(f); err != nil {
			t.Errorf("embedded dataset lacks %s: %v", f, err)
		}
	}
}

func TestUsage(t *testing.T) {
	code, stdout, _ := runToolbench(t, "help")
	if code != 0 || !strings.Contains(stdout, "eval") {
		t.Errorf("help: exit %d, output:\n%s", code, stdout)
	}
	for _, tt := range []struct {
		args []string
		want string // stderr's start; the usage follows
	}{
		{[]string{"frobnicate"}, `toolbench: unknown command "frobnicate"` + "\n\n"},
		{[]string{"--nope"}, "toolbench: unknown flag --nope\n\n"},
		{[]string{"--k", "0"}, `toolbench: --k: "0" is not a positive whole number` + "\n\n"},
		{[]string{"list", "--input", "=secret", "--config", "x"}, "toolbench list: --input: want ID=VALUE, got no ID before =\n\n"},
		{[]string{"list", "--json=maybe"}, `toolbench list: --json: "maybe" is not true or false` + "\n\n"},
		{[]string{"list", "--config", "x", "extra"}, `toolbench list: unexpected argument "extra"` + "\n\n"},
	} {
		code, stdout, stderr := runToolbench(t, tt.args...)
		if code != 2 || !strings.HasPrefix(stderr, tt.want) || !strings.Contains(stderr, "Usage:") || stdout != "" {
			t.Errorf("%q: exit %d, stderr:\n%s\nwant exit 2, stderr starting %q, then the usage", tt.args, code, stderr, tt.want)
		}
	}
	code, _, stderr := runToolbench(t, "eval", "-h")
	if code != 0 || !strings.HasPrefix(stderr, "Usage: toolbench eval") || !strings.Contains(stderr, "-queries") {
		t.Errorf("eval -h: exit %d, stderr:\n%s", code, stderr)
	}
}

// TestDefaultJSON: toolbench --json is toolbench (eval in every mode), as
// JSON. The embedded dataset is replaced by a small one to keep it quick.
func TestDefaultJSON(t *testing.T) {
	code, stdout, stderr := runToolbench(t, "--json", "--tools", "testdata/tools.jsonl", "--queries", "testdata/queries.jsonl")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	var rep evalReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout)
	}
	var modes []string
	for _, r := range rep.Runs {
		modes = append(modes, r.Mode)
	}
	if rep.Tools != 6 || strings.Join(modes, ",") != "hybrid,semantic,vector,lexical" || rep.Semantic == "" {
		t.Errorf("report: %d tools, modes %v, semantic %q; want 6 tools in every mode, USE as the semantic signal", rep.Tools, modes, rep.Semantic)
	}
	// Without a semantic encoder, the default command leaves its mode out.
	code, stdout, stderr = runToolbench(t, "--json", "--semantic", "none", "--tools", "testdata/tools.jsonl", "--queries", "testdata/queries.jsonl")
	if code != 0 {
		t.Fatalf("--semantic none: exit %d, stderr:\n%s", code, stderr)
	}
	rep = evalReport{}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	modes = modes[:0]
	for _, r := range rep.Runs {
		modes = append(modes, r.Mode)
	}
	if strings.Join(modes, ",") != "hybrid,vector,lexical" || rep.Semantic != "" {
		t.Errorf("--semantic none: modes %v, semantic %q; want hybrid,vector,lexical and none", modes, rep.Semantic)
	}
}

// TestEvalConfig evaluates against the tools of live MCP servers (the
// stdio test server of the upstream package), one of which fails to start.
func TestEvalConfig(t *testing.T) {
	bin := buildTestServer(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "mcp.json")
	data, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"good": map[string]any{"command": bin},
		"bad":  map[string]any{"command": bin, "args": []string{"-mode", "exit"}},
	}})
	queries := filepath.Join(dir, "q.jsonl")
	qs := `{"id":"e","query":"echo the text hello back to me","gold":["good__echo"]}
{"id":"w","query":"which working directory is the server in?","gold":["good__where"]}
{"id":"gone","query":"anything","gold":["bad__echo"]}
`
	if err := os.WriteFile(config, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(queries, []byte(qs), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runToolbench(t, "eval", "--config", config, "--queries", queries, "--k", "1,3", "--json", "--budget", "500")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	var rep evalReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	if rep.Tools != 3 || rep.Queries != 2 || len(rep.Skipped) != 1 || rep.Skipped[0].ID != "gone" {
		t.Errorf("tools %d, queries %d, skipped %+v; want 3, 2, [gone]", rep.Tools, rep.Queries, rep.Skipped)
	}
	if got := rep.Runs[0].AtK[1].Recall; got != 1 {
		t.Errorf("recall@3 over 3 tools = %v, want 1", got)
	}
	if !strings.Contains(stderr, "server bad is failed") {
		t.Errorf("stderr does not report the failed server:\n%s", stderr)
	}
	// Indexed once, while connecting: no second index build to report.
	if !rep.IndexedWhileConnecting || rep.ConnectMS <= 0 || rep.IndexBuildMS != 0 {
		t.Errorf("indexed while connecting %v, connect %v ms, index build %v ms; want true, > 0, 0", rep.IndexedWhileConnecting, rep.ConnectMS, rep.IndexBuildMS)
	}

	// Again: good is served from the cache (said so), with the same result.
	code, stdout, stderr = runToolbench(t, "eval", "--config", config, "--queries", queries, "--k", "1,3", "--budget", "500")
	if code != 0 {
		t.Fatalf("second eval: exit %d, stderr:\n%s", code, stderr)
	}
	for _, want := range []string{"indexed once, while connecting:", "recall@3"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("second eval: stdout lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "tools of 1 server from cache") {
		t.Errorf("second eval: stderr does not say good came from the cache:\n%s", stderr)
	}
}

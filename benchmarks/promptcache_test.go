package benchmarks_test

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/agent"
	"github.com/toolsift/toolsift/budget"
	"github.com/toolsift/toolsift/internal/dataset"
	"github.com/toolsift/toolsift/internal/textproc"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
)

// A trace is a scripted multi-step task: the model calls the tools of need
// one per step, in order, each as soon as it is offered, else after asking
// search_tools for it; then it answers. Tool results grow: the i-th call
// returns about resultTokens(i) tokens.
type trace struct {
	name string
	task string
	need []string
}

func resultTokens(i int) int { return min(150<<i, 1600) }

// scripted is that model, in process (the wire format is tested in agent).
type scripted struct {
	need  []string
	query map[string]string // search query by tool
	tok   *budget.Tokenizer
}

func (m *scripted) Complete(_ context.Context, req agent.Request) (agent.Response, error) {
	called, searched := map[string]bool{}, map[string]bool{}
	for _, msg := range req.Messages {
		for _, c := range msg.ToolCalls {
			if c.Name == think.SearchToolName {
				var a think.SearchArgs
				_ = json.Unmarshal([]byte(c.Arguments), &a)
				searched[a.Query] = true
			} else {
				called[c.Name] = true
			}
		}
	}
	offered := map[string]bool{}
	for _, t := range req.Tools {
		offered[t.Name] = true
	}
	for _, n := range m.need {
		if called[n] {
			continue
		}
		c := tool.ToolCall{Name: n, Arguments: `{}`}
		if q := m.query[n]; !offered[n] && !searched[q] && offered[think.SearchToolName] {
			args, _ := json.Marshal(think.SearchArgs{Query: q})
			c = tool.ToolCall{Name: think.SearchToolName, Arguments: string(args)}
		}
		thought := "Next I need " + n + "."
		return agent.Response{Message: tool.Message{Role: tool.RoleAssistant, Content: thought, ToolCalls: []tool.ToolCall{c}},
			Usage: agent.Usage{CompletionTokens: m.tok.Count(thought) + m.tok.Count(c.Arguments) + 8}}, nil
	}
	answer := "Done: every step of the task is complete."
	return agent.Response{Message: tool.Message{Role: tool.RoleAssistant, Content: answer},
		Usage: agent.Usage{CompletionTokens: m.tok.Count(answer)}}, nil
}

// offline is a catalog's Toolset that thinks with a given Thinker and
// answers every call with a growing made-up result, calling nothing.
type offline struct {
	*toolsift.Toolset
	th    *think.Thinker
	tok   *budget.Tokenizer
	calls int
}

func (o *offline) Think(ctx context.Context, req think.Request) (think.Offer, error) {
	return o.th.Think(ctx, req)
}

func (o *offline) Call(_ context.Context, name string, _ json.RawMessage) (tool.Result, error) {
	if _, ok := o.Get(name); !ok {
		return tool.Result{}, fmt.Errorf("%w: %s", tool.ErrUnknown, name)
	}
	var b strings.Builder
	for i := 0; o.tok.Count(b.String()) < resultTokens(o.calls); i++ {
		fmt.Fprintf(&b, "row %d of %s: status ok, value %d, updated 2026-11-%02d\n", i, name, i*37%1000, i%28+1)
	}
	o.calls++
	return tool.Result{Content: b.String()}, nil
}

// row is one policy's outcome on one trace.
type row struct {
	catalog, trace, policy, prices string
	requests, toolTokens           int
	cacheable, prompt              int
	changes, evictions             int
	cost                           float64
	allOffered                     bool
}

// BenchmarkPromptCache runs the scripted traces under both policies and
// two price models and prints, per trace: requests, tool tokens sent, the
// cacheable share of the prompt, tool list changes, estimated cost, and
// whether every tool the task needs was offered (by retrieval or
// search_tools). docs/measurements.md ("Prompt cache") has its table.
//
//	go test ./benchmarks -run '^$' -bench PromptCache -benchtime 1x
func BenchmarkPromptCache(b *testing.B) {
	catalogs := []struct {
		name   string
		load   func(b *testing.B) []tool.Tool
		traces func(b *testing.B, tools []tool.Tool) []trace
	}{
		{"mcp73", loadMCP73, mcp73Traces},
		{"bfcl", loadBFCL, bfclTraces},
	}
	prices := []string{"claude-sonnet-5", "gpt-4o-mini"}
	var rows []row
	for b.Loop() {
		rows = rows[:0]
		for _, cat := range catalogs {
			tools := cat.load(b)
			ts, step := newToolset(b, tools, nil)
			tok := step.Options().Tokenizer
			traces := cat.traces(b, tools)
			for _, pname := range prices {
				p, _ := budget.PricePreset(pname)
				for _, policy := range []think.Policy{think.PolicyStable, think.PolicyFresh} {
					opts := step.Options()
					opts.Policy, opts.Prices = policy, p
					th, err := think.New(step.Index(), &opts)
					if err != nil {
						b.Fatal(err)
					}
					for _, tr := range traces {
						rows = append(rows, runTrace(b, ts, th, tok, p, tr, cat.name, pname, policy))
					}
				}
			}
		}
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "catalog\ttrace\tprices\tpolicy\trequests\ttool tokens sent\tcacheable share\ttool list changes\tevictions\testimated cost (USD)\tall task tools offered\t")
	for _, r := range rows {
		yes := "no"
		if r.allOffered {
			yes = "yes"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%d\t%.1f%%\t%d\t%d\t%.5f\t%s\t\n", r.catalog, r.trace, r.prices, r.policy,
			r.requests, r.toolTokens, 100*float64(r.cacheable)/float64(max(r.prompt, 1)), r.changes, r.evictions, r.cost, yes)
	}
	w.Flush()
	for _, pname := range prices {
		var cost [2]float64
		for _, r := range rows {
			if r.prices == pname {
				cost[map[string]int{"stable": 0, "fresh": 1}[r.policy]] += r.cost
			}
		}
		b.ReportMetric(cost[0], "USD-stable-"+pname)
		b.ReportMetric(cost[1], "USD-fresh-"+pname)
	}
}

func runTrace(b *testing.B, ts *toolsift.Toolset, th *think.Thinker, tok *budget.Tokenizer, p budget.Prices, tr trace, catalog, pname string, policy think.Policy) row {
	query := map[string]string{}
	for _, n := range tr.need {
		tl, ok := ts.Get(n)
		if !ok {
			b.Fatalf("%s: trace %s needs %s, which is not in the catalog", catalog, tr.name, n)
		}
		name := tl.OriginalName
		if name == "" {
			name = tl.Name
		}
		query[n] = strings.NewReplacer("_", " ", "-", " ", ".", " ").Replace(name) + ": " + textproc.FirstSentence(tl.Description, 100)
	}
	tools := &offline{Toolset: ts, th: th, tok: tok}
	a, err := agent.New(&scripted{need: tr.need, query: query, tok: tok}, tools, &agent.Options{Tokenizer: tok, Prices: p, MaxSteps: 3 * len(tr.need)})
	if err != nil {
		b.Fatal(err)
	}
	res, err := a.Run(context.Background(), tr.task)
	if err != nil {
		b.Fatalf("%s %s (%s): %v", catalog, tr.name, policy, err)
	}
	r := row{catalog: catalog, trace: tr.name, policy: policy.String(), prices: pname, requests: len(res.Steps),
		toolTokens: res.ToolTokens, cacheable: res.CacheableTokens, prompt: res.CacheableTokens + res.UncachedTokens,
		changes: res.ToolListChanges, cost: res.EstimatedCost, allOffered: true}
	offered := map[string]bool{}
	for _, st := range res.Steps {
		r.evictions += len(st.PromptCache.Evicted)
		for _, o := range st.Offered {
			offered[o.Name] = true
		}
	}
	for _, n := range tr.need {
		r.allOffered = r.allOffered && offered[n]
	}
	return r
}

// sharedDir is the shared folder of datasets and the 73-server catalog
// ($TOOLSIFT_SHARED, else "shared" beside the repository or beside its
// worktrees' folder).
func sharedDir(b *testing.B) string {
	dirs := []string{os.Getenv("TOOLSIFT_SHARED"), filepath.Join("..", "..", "shared"), filepath.Join("..", "..", "..", "shared")}
	for _, dir := range dirs {
		if _, err := os.Stat(filepath.Join(dir, "mcp", "catalog.jsonl")); dir != "" && err == nil {
			return dir
		}
	}
	b.Skipf("the 73-server catalog is not in $TOOLSIFT_SHARED/mcp nor in %q", dirs[1:])
	return ""
}

func loadMCP73(b *testing.B) []tool.Tool {
	tools, _, err := dataset.LoadToolsQualified(filepath.Join(sharedDir(b), "mcp", "catalog.jsonl"), func(server, name string) string { return server + "__" + name })
	if err != nil {
		b.Fatal(err)
	}
	return tools
}

func mcp73Traces(_ *testing.B, _ []tool.Tool) []trace {
	three := []string{"everything__get-sum", "memory__read_graph", "filesystem__list_allowed_directories"}
	return []trace{
		{"three tools, named", "Add 40 and 2, read the knowledge graph kept in memory, and list the directories you may access. Then tell me the sum.", three},
		{"three tools, vague", "Run the three checks of the morning runbook and tell me the result of the first.", three},
		{"repo chores (6 tools)", "Check the git status and diff of the repository, commit the change, open a GitHub issue about it, post a note to Slack, and record it in the memory graph.",
			[]string{"git__git_status", "git__git_diff", "git__git_commit", "github__create_issue", "slack__slack_post_message", "memory__create_entities"}},
	}
}

// loadBFCL reads the BFCL catalog embedded in toolbench.
func loadBFCL(b *testing.B) []tool.Tool {
	f := gzipFile(b, filepath.Join("..", "cmd", "toolbench", "data", "bfcl", "tools.jsonl.gz"))
	tools, err := dataset.ReadTools(f, "bfcl/tools.jsonl.gz")
	if err != nil {
		b.Fatal(err)
	}
	return tools
}

// bfclTraces are BFCL's first ten queries that need three or more tools.
func bfclTraces(b *testing.B, _ []tool.Tool) []trace {
	f := gzipFile(b, filepath.Join("..", "cmd", "toolbench", "data", "bfcl", "queries.jsonl.gz"))
	qs, err := dataset.ReadQueries(f, "bfcl/queries.jsonl.gz")
	if err != nil {
		b.Fatal(err)
	}
	var out []trace
	for _, q := range qs {
		if len(q.Gold) >= 3 && len(out) < 10 {
			out = append(out, trace{name: q.ID, task: q.Query, need: slices.Clone(q.Gold)})
		}
	}
	return out
}

func gzipFile(b *testing.B, path string) io.Reader {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	zr, err := gzip.NewReader(strings.NewReader(string(data)))
	if err != nil {
		b.Fatalf("%s: %v", path, err)
	}
	return zr
}

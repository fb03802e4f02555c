package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/internal/dataset"
	"github.com/toolsift/toolsift/internal/evalmetric"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/think"
	learn "github.com/toolsift/toolsift/usage"
)

func init() {
	register(command{name: "replay", summary: "measure a ranking that learns from the calls it routes: a dataset replayed as history, then measured with and without it", run: runReplay})
}

// replayOptions are replay's flags.
type replayOptions struct {
	toolsPath, queriesPath, name string
	history, noise               float64
	seed                         uint64
	identities                   int
	json, quiet                  bool
	cache                        func(context.Context, *toolsift.Options) error
	// memory, when set, are the usage memory's options (the tests that
	// measure other rules set them); nil is the default.
	memory *learn.Options
}

// The budgets at which replay reports the gold a step sends: the
// library's default and half of it.
var replayBudgets = [2]int{think.DefaultBudget / 2, think.DefaultBudget}

func runReplay(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "replay", `--tools T.jsonl --queries Q.jsonl [--history FRACTION] [--noise FRACTION] [--seed N] [--identities N] [--json]

Streams the dataset's requests in an order drawn with --seed. The first
--history of them are history: each one's gold tools (the first of each
group) are taken as the calls that followed it and recorded in a usage
memory (with --noise, that fraction of calls goes to a wrong tool from the
request's top 10 instead), by one of --identities simulated identities drawn
for each request. The rest are measured, each as one Think step of a caller
drawn the same way, with and without the usage signal: recall@5, hit@3, and
the gold sent with its schema at 2,000 and 4,000 tokens. One identity (the
default) is a program's own memory, as the library keeps it without
usage.WithCaller; with several, one identity's calls count for another only
once two identities stand behind a tool (usage.Options.Support), as on a
team's toolsift serve with per-user logins. The format of the
files: docs/datasets.md in the source.`)
	var o replayOptions
	fs.StringVar(&o.toolsPath, "tools", "", "tools.jsonl `file`: one MCP-shaped tool per line")
	fs.StringVar(&o.queriesPath, "queries", "", "queries.jsonl `file` with gold tool names")
	fs.StringVar(&o.name, "name", "", "the set's `name` in the report and its --json key (default: the queries file's folder, or its name)")
	fs.Float64Var(&o.history, "history", 0.5, "the `fraction` of the requests replayed as history, 0 to 1")
	fs.Float64Var(&o.noise, "noise", 0, "the `fraction` of history calls made to a wrong tool of the request's top 10 instead, 0 to 1")
	seed := fs.Int64("seed", 1, "the `seed` of the order, the identities and the noise")
	fs.IntVar(&o.identities, "identities", 1, "how many simulated identities share the history and the measured requests (`N`): one identity's calls count for another only when enough identities stand behind a tool")
	fs.BoolVar(&o.json, "json", false, "print the results as one JSON object")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress bars on stderr")
	o.cache = cacheFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return usageError(fs, "unexpected argument %q", fs.Arg(0))
	case o.toolsPath == "" || o.queriesPath == "":
		return usageError(fs, "--tools and --queries are required")
	case !(o.history >= 0 && o.history <= 1):
		return usageError(fs, "--history %v: want a fraction from 0 to 1", o.history)
	case !(o.noise >= 0 && o.noise <= 1):
		return usageError(fs, "--noise %v: want a fraction from 0 to 1", o.noise)
	case *seed < 0:
		return usageError(fs, "--seed %d: want 0 or a positive number", *seed)
	case o.identities < 1:
		return usageError(fs, "--identities %d: want at least 1", o.identities)
	}
	o.seed = uint64(*seed)
	if o.name == "" {
		o.name = setName(o.queriesPath)
	}
	rep, err := replay(ctx, e, o)
	if err != nil {
		return err
	}
	if o.json {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]replayReport{o.name: rep})
	}
	printReplay(e.stdout, o.name, rep)
	return nil
}

// setName names a set by its queries file: the folder's name for a
// queries.jsonl, else the file's name without its extension.
func setName(path string) string {
	base := filepath.Base(path)
	if base == "queries.jsonl" {
		if dir := filepath.Base(filepath.Dir(path)); dir != "." && dir != string(filepath.Separator) {
			return dir
		}
	}
	return strings.TrimSuffix(base, filepath.Ext(base))
}

// withWithout is one figure measured without and with the usage signal.
type withWithout struct {
	Without float64 `json:"without"`
	With    float64 `json:"with"`
}

// replayReport is one set's replay, as --json prints it under the set's
// name.
type replayReport struct {
	Recall5  withWithout `json:"recall@5"`
	Hit3     withWithout `json:"hit@3"`
	Kept2000 withWithout `json:"kept@2000"`
	Kept4000 withWithout `json:"kept@4000"`
	// StepMS is the mean time of a Think step at 4,000 tokens, the
	// request's vectors and its tools' renderings already made.
	StepMS withWithout `json:"step_ms"`

	Tools      int     `json:"tools"`
	Requests   int     `json:"requests"`
	History    int     `json:"history"`
	Measured   int     `json:"measured"`
	Calls      int     `json:"calls"`
	Noisy      int     `json:"noisy_calls"`
	Kept       int     `json:"calls_kept"`
	Identities int     `json:"identities"`
	Noise      float64 `json:"noise"`
	Seed       uint64  `json:"seed"`
	// Lifted is the share of measured requests whose ranking the usage
	// signal changed; Skipped the requests whose gold is not in the
	// catalog.
	Lifted  float64 `json:"lifted"`
	Skipped int     `json:"skipped,omitempty"`
}

// replay runs one set.
func replay(ctx context.Context, e *env, o replayOptions) (replayReport, error) {
	var rep replayReport
	tools, err := loadToolsQualified(e, o.toolsPath)
	if err != nil {
		return rep, err
	}
	if len(tools) == 0 {
		return rep, fmt.Errorf("%s: no tools", o.toolsPath)
	}
	queries, err := dataset.LoadQueries(o.queriesPath)
	if err != nil {
		return rep, err
	}
	names := make(map[string]bool, len(tools))
	for _, t := range tools {
		names[t.Name] = true
	}
	queries = slices.DeleteFunc(queries, func(q dataset.Query) bool {
		for _, g := range q.Groups() {
			for _, n := range g {
				if !names[n] {
					rep.Skipped++
					return true
				}
			}
		}
		return false
	})
	if len(queries) < 2 {
		return rep, fmt.Errorf("%s: %d requests have their gold tools in the catalog; replay needs at least 2", o.queriesPath, len(queries))
	}

	emb, use, err := toolsift.DefaultEmbedders()
	if err != nil {
		return rep, err
	}
	// Every step embeds the same request texts: once is enough.
	sem := &memoEmbedder{Embedder: use, vecs: map[string][]float32{}}
	opts := toolsift.Options{Logger: slog.New(warnHandler{e})}
	if err := o.cache(ctx, &opts); err != nil {
		return rep, err
	}
	if opts.Thinker, err = stepThinker(e, &opts, emb, sem, think.Options{}); err != nil {
		return rep, err
	}
	base := opts.Thinker
	ts, err := toolsift.New(ctx, nil, &opts)
	if err != nil {
		return rep, err
	}
	defer ts.Close()
	showProgress := e.stderrIsTerminal && !o.quiet && !o.json
	var ev evalReport
	if err := indexTools(ctx, e, base.Index(), tools, o.toolsPath, showProgress, &ev); err != nil {
		return rep, err
	}
	mem, err := learn.New(o.memory)
	if err != nil {
		return rep, err
	}
	// The four steps of a measured request: without and with the usage
	// signal, at each budget.
	var steps [2][2]*think.Thinker
	for i, learn := range []bool{false, true} {
		for j, b := range replayBudgets {
			to := base.Options()
			to.Budget = b
			if learn {
				to.Retrieval.Usage = mem
			}
			if steps[i][j], err = think.New(base.Index(), &to); err != nil {
				return rep, err
			}
		}
	}
	without, with := steps[0][1], steps[1][1]
	// What a first step would build (the catalog's cost, the server
	// documents) is built now, so that the steps' times compare the
	// rankings alone.
	for _, row := range steps {
		for _, th := range row {
			th.CatalogCost()
			if err := th.Retriever().Prepare(ctx); err != nil {
				return rep, err
			}
		}
	}

	rng := rand.New(rand.NewPCG(o.seed, 0x7265706c6179)) // "replay"
	order := rng.Perm(len(queries))
	ident := make([]string, len(queries))
	for i := range ident {
		ident[i] = fmt.Sprintf("user-%d", rng.IntN(o.identities))
	}
	nh := int(o.history*float64(len(queries)) + 0.5)
	nh = min(nh, len(queries)-1)
	rep.Tools, rep.Requests, rep.History, rep.Measured = len(tools), len(queries), nh, len(queries)-nh
	rep.Identities, rep.Noise, rep.Seed = o.identities, o.noise, o.seed

	// History: each request's calls, a minute apart.
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	bar := newProgress(e.stderr, showProgress, "history", nh)
	for n, i := range order[:nh] {
		if err := ctx.Err(); err != nil {
			bar.Done()
			return rep, err
		}
		q := queries[i]
		cctx := learn.WithCaller(ctx, learn.Caller{Identity: ident[i]})
		var top []string
		if o.noise > 0 {
			ms, err := without.Retriever().Retrieve(cctx, retrieval.Query{Task: q.Query})
			if err != nil {
				bar.Done()
				return rep, fmt.Errorf("request %s: %w", q.ID, err)
			}
			for _, m := range ms[:min(10, len(ms))] {
				top = append(top, m.Tool.Name)
			}
		}
		for _, call := range historyCalls(q, top, o.noise, rng) {
			if call.noisy {
				rep.Noisy++
			}
			rep.Calls++
			if err := with.Retriever().Record(cctx, q.Query, call.tool, start.Add(time.Duration(n)*time.Minute)); err != nil {
				bar.Done()
				return rep, fmt.Errorf("request %s: %w", q.ID, err)
			}
		}
		bar.Add(1)
	}
	bar.Done()
	for range mem.Entries("") {
		rep.Kept++
	}

	// The rest, measured: each a first step, as the agent's.
	var lifted float64
	var stepMS [2]time.Duration
	bar = newProgress(e.stderr, showProgress, "measured", rep.Measured)
	for _, i := range order[nh:] {
		if err := ctx.Err(); err != nil {
			bar.Done()
			return rep, err
		}
		q := queries[i]
		g := q.Groups()
		cctx := learn.WithCaller(ctx, learn.Caller{Identity: ident[i]})
		req := think.Request{Query: retrieval.Query{Task: q.Query}}
		var ranked [2][]string
		// A step first renders the tools it has not met (their tokens at
		// each tier, kept by the tokenizer): one untimed step first, so
		// that the timed ones compare rankings, not who met a tool first.
		if _, err := without.Think(cctx, req); err != nil {
			bar.Done()
			return rep, fmt.Errorf("request %s: %w", q.ID, err)
		}
		for li := range 2 {
			var recall5, hit3 *float64
			if li == 0 {
				recall5, hit3 = &rep.Recall5.Without, &rep.Hit3.Without
			} else {
				recall5, hit3 = &rep.Recall5.With, &rep.Hit3.With
			}
			for bi, b := range replayBudgets {
				t0 := time.Now()
				off, err := steps[li][bi].Think(cctx, req)
				if err != nil {
					bar.Done()
					return rep, fmt.Errorf("request %s: %w", q.ID, err)
				}
				schema := off.WithSchema()
				kept := evalmetric.Recall(schema, g, len(schema))
				if b == think.DefaultBudget {
					stepMS[li] += time.Since(t0)
					for _, m := range off.Ranked {
						ranked[li] = append(ranked[li], m.Tool.Name)
					}
					*recall5 += evalmetric.Recall(ranked[li], g, 5)
					*hit3 += evalmetric.Hit(ranked[li], g, 3)
				}
				switch {
				case li == 0 && b == think.DefaultBudget:
					rep.Kept4000.Without += kept
				case li == 0:
					rep.Kept2000.Without += kept
				case b == think.DefaultBudget:
					rep.Kept4000.With += kept
				default:
					rep.Kept2000.With += kept
				}
			}
		}
		if !slices.Equal(ranked[0], ranked[1]) {
			lifted++
		}
		bar.Add(1)
	}
	bar.Done()
	n := float64(rep.Measured)
	for _, w := range []*withWithout{&rep.Recall5, &rep.Hit3, &rep.Kept2000, &rep.Kept4000} {
		w.Without, w.With = round3(w.Without/n), round3(w.With/n)
	}
	rep.StepMS = withWithout{Without: round3(ms(stepMS[0]) / n), With: round3(ms(stepMS[1]) / n)}
	rep.Lifted = round3(lifted / n)
	return rep, nil
}

// historyCall is one call a history request is taken to have led to.
type historyCall struct {
	tool  string
	noisy bool
}

// historyCalls are the calls that followed q: the first tool of each gold
// group, each replaced, with probability noise, by a tool of top (the
// request's best ranked) that is not gold, drawn from rng.
func historyCalls(q dataset.Query, top []string, noise float64, rng *rand.Rand) []historyCall {
	groups := q.Groups()
	gold := map[string]bool{}
	for _, g := range groups {
		for _, n := range g {
			gold[n] = true
		}
	}
	var wrong []string
	for _, n := range top {
		if !gold[n] {
			wrong = append(wrong, n)
		}
	}
	var out []historyCall
	for _, g := range groups {
		c := historyCall{tool: g[0]}
		if noise > 0 && rng.Float64() < noise && len(wrong) > 0 {
			c = historyCall{tool: wrong[rng.IntN(len(wrong))], noisy: true}
		}
		if !slices.ContainsFunc(out, func(x historyCall) bool { return x.tool == c.tool }) {
			out = append(out, c)
		}
	}
	return out
}

// learnedThinker returns a Thinker with base's options and index, and a usage memory
// that learned path's requests (a queries.jsonl), each as the calls of its
// gold tools (the first of each group), a minute apart, by the caller of
// ctx.
func learnedThinker(ctx context.Context, base *think.Thinker, path string) (*think.Thinker, error) {
	queries, err := dataset.LoadQueries(path)
	if err != nil {
		return nil, err
	}
	mem, err := learn.New(nil)
	if err != nil {
		return nil, err
	}
	to := base.Options()
	to.Retrieval.Usage = mem
	th, err := think.New(base.Index(), &to)
	if err != nil {
		return nil, err
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, q := range queries {
		for _, c := range historyCalls(q, nil, 0, nil) {
			if err := th.Retriever().Record(ctx, q.Query, c.tool, start.Add(time.Duration(i)*time.Minute)); err != nil {
				return nil, fmt.Errorf("%s: request %s: %w", path, q.ID, err)
			}
		}
	}
	return th, nil
}

func printReplay(w io.Writer, name string, rep replayReport) {
	fmt.Fprintf(w, "set       %s: %d tools, %d requests", name, rep.Tools, rep.Requests)
	if rep.Skipped > 0 {
		fmt.Fprintf(w, " (%d skipped: gold not in the catalog)", rep.Skipped)
	}
	fmt.Fprintf(w, "\nhistory   %d requests, %d calls (%d to a wrong tool), %d kept; %d identities; seed %d\n", rep.History, rep.Calls, rep.Noisy, rep.Kept, rep.Identities, rep.Seed)
	fmt.Fprintf(w, "measured  %d requests, %.1f%% of them ranked differently with the usage signal\n\n", rep.Measured, 100*rep.Lifted)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\twithout\twith\tchange\t")
	for _, r := range []struct {
		name string
		v    withWithout
	}{{"recall@5", rep.Recall5}, {"hit@3", rep.Hit3}, {"gold kept at 2,000 tokens", rep.Kept2000}, {"gold kept at 4,000 tokens", rep.Kept4000}} {
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%+.3f\t\n", r.name, r.v.Without, r.v.With, r.v.With-r.v.Without)
	}
	fmt.Fprintf(tw, "step (4,000 tokens)\t%s\t%s\t\t\n", fmtMS(rep.StepMS.Without), fmtMS(rep.StepMS.With))
	tw.Flush()
	fmt.Fprintln(w, "(gold kept: the gold a step sends with its schema; a measured request is not recorded)")
}

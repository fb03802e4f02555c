package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/budget"
	"github.com/toolsift/toolsift/encoder"
	"github.com/toolsift/toolsift/internal/dataset"
	"github.com/toolsift/toolsift/internal/evalmetric"
	"github.com/toolsift/toolsift/provider"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/toolindex"
	"github.com/toolsift/toolsift/upstream"
)

// The embedded default dataset: BFCL v4 pooled (Apache-2.0; see
// data/bfcl/NOTICE and data/bfcl/LICENSE).
//
//go:embed data/bfcl
var defaultData embed.FS

const defaultDataName = "BFCL v4 (embedded; Apache-2.0, see cmd/toolbench/data/bfcl/NOTICE)"

func init() {
	register(command{name: "eval", summary: "measure retrieval quality and prompt tokens on a tools + queries dataset", run: runEval})
	register(command{name: "", summary: "evaluate the embedded default dataset", run: runDefault})
}

// evalOptions is everything eval needs, whichever way it was started.
type evalOptions struct {
	toolsPath, queriesPath, configPath string
	ks                                 []int
	budget, pack                       int
	embedder, semantic                 string
	embedModel, embedBaseURL           string
	modes                              []retrieval.Mode
	encoding, model                    string
	rankingsPath, plotPath             string
	json, quiet, connect               bool
	timeout                            time.Duration
	cache                              func(context.Context, *toolsift.Options) error
	listing                            func(*think.Options)
	inputs                             map[string]string
}

// runDefault is toolbench without a command: eval of the embedded dataset
// (unless its flags say otherwise), every mode side by side.
func runDefault(ctx context.Context, e *env, args []string) error {
	o, err := parseEval(e, "", "hybrid,semantic,vector,lexical", args)
	if err != nil {
		return err
	}
	return evaluate(ctx, e, o)
}

// defaultBudget is the agent's, so eval measures what an agent would send.
const defaultBudget = think.DefaultBudget

func runEval(ctx context.Context, e *env, args []string) error {
	o, err := parseEval(e, "eval", "hybrid", args)
	if err != nil {
		return err
	}
	return evaluate(ctx, e, o)
}

// parseEval reads eval's flags; name is the command's ("" for toolbench
// without one), modes the default --mode.
func parseEval(e *env, name, modes string, args []string) (evalOptions, error) {
	fs := newFlags(e, name, `[--tools T.jsonl --queries Q.jsonl | --config mcp.json --queries Q.jsonl] [flags]

Without --tools and --config, eval uses the embedded BFCL dataset. The format of
tools.jsonl and queries.jsonl: docs/datasets.md in the source. With --config,
servers whose tool list is in the cache are served from it (--connect starts
every server).`)
	var o evalOptions
	fs.StringVar(&o.toolsPath, "tools", "", "tools.jsonl `file`: one MCP-shaped tool per line (format: docs/datasets.md in the source)")
	fs.StringVar(&o.queriesPath, "queries", "", "queries.jsonl `file` with gold tool names")
	fs.StringVar(&o.configPath, "config", "", "mcpServers config `file`: evaluate against the live servers' tools (gold names are qualified names, server__tool, as list --json prints them)")
	ks := fs.String("k", "1,3,5,10", "comma-separated cut-offs `k`")
	fs.IntVar(&o.budget, "budget", defaultBudget, "tool-schema token `budget` for the selection step")
	pack := packFlag(fs)
	o.listing = listingFlags(fs)
	fs.StringVar(&o.embedder, "embedder", "local", "`embedder` of the vector signal: local (hashed n-grams, offline, default), use (Universal Sentence Encoder Lite, offline) or openai (OPENAI_API_KEY / OPENAI_BASE_URL)")
	fs.StringVar(&o.semantic, "semantic", "", "`encoder` of the semantic signal: use (Universal Sentence Encoder Lite, offline; the default with --embedder local), none (the default with another --embedder), model2vec:DIR (a Model2Vec model directory) or openai")
	fs.StringVar(&o.embedModel, "embed-model", "text-embedding-3-small", "embedding `model` for --embedder openai")
	fs.StringVar(&o.embedBaseURL, "embed-base-url", "", "OpenAI-compatible base `URL` for --embedder openai (default $OPENAI_BASE_URL, else api.openai.com)")
	modeList := fs.String("mode", modes, "ranking `mode`: hybrid, semantic, vector or lexical; a comma-separated list compares them")
	fs.StringVar(&o.encoding, "encoding", "", "tiktoken `encoding` for token counts (default: from --model)")
	fs.StringVar(&o.model, "model", "gpt-4o", "chat `model` whose tokenizer counts the tokens")
	fs.StringVar(&o.rankingsPath, "rankings", "", "write one JSON line per query to `file`: id, ranked, selected, selected_tokens")
	fs.StringVar(&o.plotPath, "plot", "", "write an SVG `file`: recall@k and the tool tokens of a step, per mode")
	fs.BoolVar(&o.json, "json", false, "print the results as one JSON object")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress line or bars on stderr")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "per-server connect `timeout` with --config")
	o.cache = cacheFlags(fs)
	connect := connectFlag(fs)
	o.inputs = inputFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return o, err
	}
	o.connect = *connect
	var ksErr, modesErr error
	o.ks, ksErr = parseKs(*ks)
	o.modes, modesErr = parseModes(*modeList)
	switch {
	case fs.NArg() > 0:
		return o, usageError(fs, "unexpected argument %q", fs.Arg(0))
	case ksErr != nil:
		return o, usageError(fs, "--k: %v", ksErr)
	case modesErr != nil:
		return o, usageError(fs, "--mode: %v", modesErr)
	case o.toolsPath != "" && o.configPath != "":
		return o, usageError(fs, "--tools and --config are exclusive: tools come from a file or from live servers")
	case (o.toolsPath != "" || o.configPath != "") && o.queriesPath == "":
		return o, usageError(fs, "--queries is required with --tools or --config")
	case o.toolsPath == "" && o.configPath == "" && o.queriesPath != "":
		return o, usageError(fs, "--queries needs --tools or --config (the embedded dataset has its own queries)")
	case o.budget <= 0:
		return o, usageError(fs, "--budget %d: want a positive number of tokens", o.budget)
	case *pack < 0:
		return o, usageError(fs, "--pack %d: want 0 or a positive number of tools", *pack)
	case !slices.Contains([]string{"local", "use", "openai"}, o.embedder):
		return o, usageError(fs, "--embedder %q: want local, use or openai", o.embedder)
	case o.semantic != "" && !slices.Contains([]string{"use", "none", "openai"}, o.semantic) && !strings.HasPrefix(o.semantic, "model2vec:"):
		return o, usageError(fs, "--semantic %q: want use, none, model2vec:DIR or openai", o.semantic)
	case o.semantic == "model2vec:":
		return o, usageError(fs, "--semantic model2vec: needs the model's directory, as model2vec:DIR")
	}
	o.pack = *pack
	if o.semantic == "" {
		o.semantic = "none"
		if o.embedder == "local" {
			o.semantic = "use"
		}
	}
	if o.semantic == "none" && slices.Contains(o.modes, retrieval.Semantic) {
		modeSet := false
		fs.Visit(func(f *flag.Flag) { modeSet = modeSet || f.Name == "mode" })
		if modeSet {
			return o, usageError(fs, "--mode semantic needs a semantic encoder (--semantic use, model2vec:DIR or openai)")
		}
		o.modes = slices.DeleteFunc(o.modes, func(m retrieval.Mode) bool { return m == retrieval.Semantic })
	}
	return o, nil
}

func parseKs(s string) ([]int, error) {
	var ks []int
	for _, f := range strings.Split(s, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || k <= 0 {
			return nil, fmt.Errorf("%q is not a positive whole number", f)
		}
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return slices.Compact(ks), nil
}

func parseModes(s string) ([]retrieval.Mode, error) {
	var modes []retrieval.Mode
	for _, f := range strings.Split(s, ",") {
		var m retrieval.Mode
		switch strings.TrimSpace(f) {
		case "hybrid":
			m = retrieval.Hybrid
		case "vector":
			m = retrieval.Vector
		case "lexical":
			m = retrieval.Lexical
		case "semantic":
			m = retrieval.Semantic
		default:
			return nil, fmt.Errorf("unknown mode %q (want hybrid, semantic, vector or lexical)", f)
		}
		if !slices.Contains(modes, m) {
			modes = append(modes, m)
		}
	}
	return modes, nil
}

// evalReport is the whole result, as printed by --json.
type evalReport struct {
	Dataset      string    `json:"dataset"`
	Tools        int       `json:"tools"`
	Queries      int       `json:"queries"`
	Skipped      []skipped `json:"skipped,omitempty"`
	Embedder     string    `json:"embedder"`
	Semantic     string    `json:"semantic,omitempty"`
	Encoding     string    `json:"encoding"`
	IndexBuildMS float64   `json:"index_build_ms"`
	// With --config the tools are indexed as the servers list them, while
	// connecting (once): ConnectMS is connecting and indexing together, and
	// IndexBuildMS is 0.
	ConnectMS              float64     `json:"connect_ms,omitempty"`
	IndexedWhileConnecting bool        `json:"indexed_while_connecting,omitempty"`
	AllToolsTokens         int         `json:"all_tools_tokens"`
	Budget                 int         `json:"budget"`
	Runs                   []modeStats `json:"runs"`
}

type skipped struct {
	ID      string   `json:"id"`
	Missing []string `json:"missing"`
}

type modeStats struct {
	Mode    string   `json:"mode"`
	AtK     []atK    `json:"at_k"`
	MRR     float64  `json:"mrr"`
	NDCG10  float64  `json:"ndcg@10"`
	Latency latency  `json:"latency_ms"`
	Select  selStats `json:"selected"`
}

type atK struct {
	K        int     `json:"k"`
	Recall   float64 `json:"recall"`
	Hit      float64 `json:"hit"`
	Complete float64 `json:"complete"`
	// Tokens is the mean full-schema cost of the top k tools.
	Tokens float64 `json:"tokens"`
}

type latency struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
}

// selStats describes what budget.Select kept within the budget.
type selStats struct {
	MeanTokens float64 `json:"mean_tokens"`
	MeanTools  float64 `json:"mean_tools"`
	// Recall is the gold recall of the selected set: RecallSchema, of
	// the tools sent with their schemas (callable at once), plus
	// RecallListed, of the gold sent only listed (budget.TierName: the
	// name and a line; callable after a search_tools step).
	Recall       float64 `json:"recall"`
	RecallSchema float64 `json:"recall_with_schema"`
	RecallListed float64 `json:"recall_listed"`
	// MeanListed is how many of MeanTools were listed.
	MeanListed float64 `json:"mean_listed"`
	// Reduction is 1 - MeanTokens/AllToolsTokens.
	Reduction float64 `json:"reduction"`
}

type rankingLine struct {
	ID             string   `json:"id"`
	Mode           string   `json:"mode"`
	Ranked         []string `json:"ranked"`
	Selected       []string `json:"selected"`
	SelectedTokens int      `json:"selected_tokens"`
}

func evaluate(ctx context.Context, e *env, o evalOptions) error {
	showProgress := e.stderrIsTerminal && !o.quiet && !o.json

	emb, err := newEmbedder(e, o, o.embedder)
	if err != nil {
		return err
	}
	var sem toolindex.Embedder
	if o.semantic != "none" {
		if sem, err = newEmbedder(e, o, o.semantic); err != nil {
			return err
		}
		// Every mode embeds the same query texts: once is enough.
		sem = &memoEmbedder{Embedder: sem, vecs: map[string][]float32{}}
	}
	encoding := o.encoding
	if encoding == "" {
		encoding, _ = budget.EncodingForModel(o.model)
	}
	// Each query is one Think step, the agent's own: the same Thinker
	// (think.New), ranking depth, budget and search_tools policy, so the
	// in-budget figures are what the agent sends. A k above the step's
	// depth deepens the ranking.
	opts := toolsift.Options{Logger: slog.New(warnHandler{e})}
	if err := o.cache(ctx, &opts); err != nil {
		return err
	}
	tok, err := budget.NewTokenizer("", encoding)
	if err != nil {
		return err
	}
	step := think.Options{Budget: o.budget, Tokenizer: tok, Retrieval: retrieval.Options{K: max(o.ks[len(o.ks)-1], think.DefaultK)}}
	setPack(&step, o.pack)
	o.listing(&step)
	if opts.Thinker, err = stepThinker(e, &opts, emb, sem, step); err != nil {
		return err
	}
	// With --config the Toolset that connects is the one measured: its
	// tools are indexed once, as the servers list them.
	ts, tools, queries, name, connected, err := loadEvalData(ctx, e, o, opts)
	if err != nil {
		return err
	}
	defer ts.Close()
	if len(tools) == 0 {
		return fmt.Errorf("%s: no tools", name)
	}
	base := opts.Thinker.Options()

	rep := evalReport{Dataset: name, Tools: len(tools), Embedder: emb.ID(), Encoding: tok.Encoding(), Budget: o.budget}
	if sem != nil {
		rep.Semantic = sem.ID()
	}

	// Queries whose gold is not in the catalog are reported and skipped,
	// never counted as misses.
	names := make(map[string]bool, len(tools))
	for _, t := range tools {
		names[t.Name] = true
	}
	var usable []dataset.Query
	for _, q := range queries {
		var missing []string
		for _, g := range q.Groups() {
			for _, n := range g {
				if !names[n] {
					missing = append(missing, n)
				}
			}
		}
		if len(missing) > 0 {
			rep.Skipped = append(rep.Skipped, skipped{ID: q.ID, Missing: missing})
			continue
		}
		usable = append(usable, q)
	}
	rep.Queries = len(usable)
	if len(usable) == 0 {
		return fmt.Errorf("%s: no query has all its gold tools in the catalog (%d skipped)", name, len(rep.Skipped))
	}

	// Full-tier cost of every tool: what offering them all would cost.
	cost := make(map[string]int, len(tools))
	for _, t := range tools {
		r, err := tok.CountTool(t, budget.TierFull)
		if err != nil {
			return fmt.Errorf("tool %q: %w", t.Name, err)
		}
		cost[t.Name] = r.Tokens
		rep.AllToolsTokens += r.Tokens
	}

	if connected > 0 {
		rep.ConnectMS, rep.IndexedWhileConnecting = ms(connected), true
	} else if err := indexTools(ctx, e, opts.Thinker.Index(), tools, name, showProgress, &rep); err != nil {
		return err
	}

	var rankings *json.Encoder
	if o.rankingsPath != "" {
		f, err := os.Create(o.rankingsPath)
		if err != nil {
			return err
		}
		defer f.Close()
		rankings = json.NewEncoder(f)
		rankings.SetEscapeHTML(false)
	}

	for _, mode := range o.modes {
		to := base
		to.Retrieval.Mode = mode
		th, err := think.New(opts.Thinker.Index(), &to)
		if err != nil {
			return err
		}
		st := modeStats{Mode: mode.String(), AtK: make([]atK, len(o.ks))}
		lat := make([]time.Duration, 0, len(usable))
		bar := newProgress(e.stderr, showProgress, mode.String(), len(usable))
		for _, q := range usable {
			if err := ctx.Err(); err != nil {
				bar.Done()
				return err
			}
			off, err := th.Think(ctx, think.Request{Query: retrieval.Query{Task: q.Query}})
			lat = append(lat, off.Retrieve)
			if err != nil {
				bar.Done()
				return fmt.Errorf("query %s: %w", q.ID, err)
			}
			ranked := make([]string, len(off.Ranked))
			for i, m := range off.Ranked {
				ranked[i] = m.Tool.Name
			}
			groups := q.Groups()
			for i, k := range o.ks {
				st.AtK[i].Recall += evalmetric.Recall(ranked, groups, k)
				st.AtK[i].Hit += evalmetric.Hit(ranked, groups, k)
				st.AtK[i].Complete += evalmetric.Complete(ranked, groups, k)
				for _, n := range ranked[:min(k, len(ranked))] {
					st.AtK[i].Tokens += float64(cost[n])
				}
			}
			st.MRR += evalmetric.MRR(ranked, groups)
			st.NDCG10 += evalmetric.NDCG(ranked, groups, 10)

			selected := off.Names()
			st.Select.MeanTokens += float64(off.Tokens)
			st.Select.MeanTools += float64(len(selected))
			all, schema := evalmetric.Recall(selected, groups, len(selected)), off.WithSchema()
			withSchema := evalmetric.Recall(schema, groups, len(schema))
			st.Select.Recall += all
			st.Select.RecallSchema += withSchema
			st.Select.RecallListed += all - withSchema
			st.Select.MeanListed += float64(len(off.Listed()))
			if rankings != nil {
				if err := rankings.Encode(rankingLine{ID: q.ID, Mode: mode.String(), Ranked: ranked, Selected: nonNil(selected), SelectedTokens: off.Tokens}); err != nil {
					bar.Done()
					return err
				}
			}
			bar.Add(1)
		}
		bar.Done()
		n := float64(len(usable))
		for i := range st.AtK {
			st.AtK[i].K = o.ks[i]
			st.AtK[i].Recall /= n
			st.AtK[i].Hit /= n
			st.AtK[i].Complete /= n
			st.AtK[i].Tokens /= n
		}
		st.MRR /= n
		st.NDCG10 /= n
		st.Select.MeanTokens /= n
		st.Select.MeanTools /= n
		st.Select.Recall /= n
		st.Select.RecallSchema /= n
		st.Select.RecallListed /= n
		st.Select.MeanListed /= n
		st.Select.Reduction = 1 - st.Select.MeanTokens/float64(rep.AllToolsTokens)
		st.Latency = latency{P50: ms(percentile(lat, 0.50)), P95: ms(percentile(lat, 0.95))}
		rep.Runs = append(rep.Runs, st)
	}

	if o.plotPath != "" {
		if err := writePlot(o.plotPath, rep, o); err != nil {
			return err
		}
	}
	if o.json {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	printReport(e.stdout, rep)
	for _, s := range rep.Skipped {
		fmt.Fprintf(e.stderr, "skipped query %s: gold not in the catalog: %s\n", s.ID, strings.Join(s.Missing, ", "))
	}
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// indexTools indexes tools read from a file into ix (the index of a
// Toolset made empty by New), with a progress bar, and records how long it
// took.
func indexTools(ctx context.Context, e *env, ix *toolindex.Index, tools []tool.Tool, name string, showProgress bool, rep *evalReport) error {
	start := time.Now()
	bar := newProgress(e.stderr, showProgress, "indexing", len(tools))
	defer bar.Done()
	const chunk = 256
	for i := 0; i < len(tools); i += chunk {
		part := tools[i:min(i+chunk, len(tools))]
		if _, err := ix.Upsert(ctx, part...); err != nil {
			return fmt.Errorf("indexing %s: %w", name, err)
		}
		bar.Add(len(part))
	}
	rep.IndexBuildMS = ms(time.Since(start))
	return nil
}

// loadEvalData returns the Toolset to evaluate, the tools and queries, and
// a name for them. With --config the Toolset is the one that connected to
// the servers, its tools indexed once, as they were listed, and connected
// is how long connecting and indexing took (servers whose list the cache
// holds are served from it, unless --connect). Otherwise it is an empty
// Toolset from New, connected is 0, and the caller indexes the tools into
// it, timed (indexTools).
func loadEvalData(ctx context.Context, e *env, o evalOptions, opts toolsift.Options) (ts *toolsift.Toolset, tools []tool.Tool, queries []dataset.Query, name string, connected time.Duration, err error) {
	switch {
	case o.configPath != "":
		if queries, err = dataset.LoadQueries(o.queriesPath); err != nil {
			return nil, nil, nil, "", 0, err
		}
		c := connection{hub: upstream.HubOptions{Timeout: o.timeout, MaxRestarts: -1, Start: startMode(o.connect)}, inputs: o.inputs}
		ts, _, connected, err = openToolset(ctx, e, o.configPath, c, opts, o.quiet)
		if err != nil {
			return nil, nil, nil, "", 0, err
		}
		statuses := ts.Status()
		warnFailed(e, statuses, " (not evaluated)")
		if note := cacheNote(statuses, time.Now()); note != "" {
			fmt.Fprintln(e.stderr, note)
		}
		return ts, ts.Tools(), queries, o.configPath + " (live servers)", max(connected, time.Nanosecond), nil
	case o.toolsPath != "":
		if tools, err = loadToolsQualified(e, o.toolsPath); err != nil {
			return nil, nil, nil, "", 0, err
		}
		if queries, err = dataset.LoadQueries(o.queriesPath); err != nil {
			return nil, nil, nil, "", 0, err
		}
		name = o.toolsPath
	default:
		if tools, queries, err = loadDefaultData(); err != nil {
			return nil, nil, nil, "", 0, err
		}
		name = defaultDataName
	}
	if ts, err = toolsift.New(ctx, nil, &opts); err != nil {
		return nil, nil, nil, "", 0, err
	}
	return ts, tools, queries, name, 0, nil
}

func loadDefaultData() ([]tool.Tool, []dataset.Query, error) {
	open := func(name string) (io.Reader, error) {
		b, err := defaultData.ReadFile("data/bfcl/" + name)
		if err != nil {
			return nil, err
		}
		return gzip.NewReader(bytes.NewReader(b))
	}
	r, err := open("tools.jsonl.gz")
	if err != nil {
		return nil, nil, fmt.Errorf("embedded dataset: %w", err)
	}
	tools, err := dataset.ReadTools(r, "embedded tools.jsonl")
	if err != nil {
		return nil, nil, err
	}
	r, err = open("queries.jsonl.gz")
	if err != nil {
		return nil, nil, fmt.Errorf("embedded dataset: %w", err)
	}
	queries, err := dataset.ReadQueries(r, "embedded queries.jsonl")
	return tools, queries, err
}

// newEmbedder returns the embedder named by --embedder or --semantic.
func newEmbedder(e *env, o evalOptions, name string) (toolindex.Embedder, error) {
	switch {
	case name == "local":
		return toolindex.NewLocalEmbedder(nil)
	case name == "openai":
		endpoint, err := provider.Options{BaseURL: o.embedBaseURL}.Resolve(e.getenv)
		if err != nil {
			if endpoint.BaseURL == provider.DefaultBaseURL {
				return nil, errors.New("openai embeddings need OPENAI_API_KEY (for api.openai.com) or --embed-base-url / OPENAI_BASE_URL (for a local OpenAI-compatible server)")
			}
			return nil, err
		}
		return provider.NewEmbedder(o.embedModel, &provider.EmbedderOptions{Options: endpoint})
	case name == "use":
		return encoder.NewUSE(nil)
	case strings.HasPrefix(name, "model2vec:"):
		return encoder.LoadModel2Vec(strings.TrimPrefix(name, "model2vec:"), nil)
	}
	return nil, fmt.Errorf("unknown embedder %q", name)
}

// memoEmbedder remembers the vectors of the texts it embedded, for the
// life of one evaluation (in memory only).
type memoEmbedder struct {
	toolindex.Embedder
	mu   sync.Mutex
	vecs map[string][]float32
}

func (m *memoEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return m.memo(ctx, texts, "", m.Embedder.Embed)
}

// EmbedQueries is the wrapped embedder's path for query texts when it has
// one (encoder.USE.EmbedQueries, which retrieval uses), else Embed; its
// vectors are remembered apart from Embed's.
func (m *memoEmbedder) EmbedQueries(ctx context.Context, texts []string) ([][]float32, error) {
	q, ok := m.Embedder.(interface {
		EmbedQueries(context.Context, []string) ([][]float32, error)
	})
	if !ok {
		return m.Embed(ctx, texts)
	}
	return m.memo(ctx, texts, "query\x00", q.EmbedQueries)
}

// memo returns the vectors of texts, remembered under prefix+text, the
// missing ones from embed.
func (m *memoEmbedder) memo(ctx context.Context, texts []string, prefix string, embed func(context.Context, []string) ([][]float32, error)) ([][]float32, error) {
	out := make([][]float32, len(texts))
	var miss []string
	m.mu.Lock()
	for i, t := range texts {
		if v, ok := m.vecs[prefix+t]; ok {
			out[i] = v
		} else {
			miss = append(miss, t)
		}
	}
	m.mu.Unlock()
	if len(miss) == 0 {
		return out, nil
	}
	vecs, err := embed(ctx, miss)
	if err != nil {
		return nil, err
	}
	if len(vecs) != len(miss) {
		return nil, fmt.Errorf("%w: %s returned %d vectors for %d texts", toolindex.ErrDimension, m.ID(), len(vecs), len(miss))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	j := 0
	for i, t := range texts {
		if out[i] == nil {
			m.vecs[prefix+t] = vecs[j]
			out[i] = vecs[j]
			j++
		}
	}
	return out, nil
}

func printReport(w io.Writer, rep evalReport) {
	fmt.Fprintf(w, "dataset   %s\n", rep.Dataset)
	fmt.Fprintf(w, "catalog   %d tools, %d queries", rep.Tools, rep.Queries)
	if len(rep.Skipped) > 0 {
		fmt.Fprintf(w, " (%d skipped: gold not in catalog)", len(rep.Skipped))
	}
	sem := ""
	if rep.Semantic != "" {
		sem = "; semantic " + rep.Semantic
	}
	if rep.IndexedWhileConnecting {
		fmt.Fprintf(w, "\nembedder  %s%s; indexed once, while connecting: %s for connecting and indexing\n\n", rep.Embedder, sem, fmtMS(rep.ConnectMS))
	} else {
		fmt.Fprintf(w, "\nembedder  %s%s; index built in %s\n\n", rep.Embedder, sem, fmtMS(rep.IndexBuildMS))
	}

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := "mode\t"
	for _, k := range rep.Runs[0].AtK {
		header += fmt.Sprintf("recall@%d\t", k.K)
	}
	header += "MRR\tnDCG@10\tp50\tp95\t"
	fmt.Fprintln(tw, header)
	for _, r := range rep.Runs {
		line := r.Mode + "\t"
		for _, k := range r.AtK {
			line += fmt.Sprintf("%.3f\t", k.Recall)
		}
		line += fmt.Sprintf("%.3f\t%.3f\t%s\t%s\t", r.MRR, r.NDCG10, fmtMS(r.Latency.P50), fmtMS(r.Latency.P95))
		fmt.Fprintln(tw, line)
	}
	tw.Flush()

	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\tk\thit@k\tcomplete@k\tmean tokens of top k\t")
	for _, r := range rep.Runs {
		for _, k := range r.AtK {
			fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.3f\t%.0f\t\n", r.Mode, k.K, k.Hit, k.Complete, k.Tokens)
		}
	}
	tw.Flush()

	fmt.Fprintf(w, "\nprompt tokens (%s): all %d tools = %d; selected within a budget of %d:\n", rep.Encoding, rep.Tools, rep.AllToolsTokens, rep.Budget)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\tmean tokens\tmean tools\tof them listed\tgold with schema\tgold listed\tgold recall\treduction\t")
	for _, r := range rep.Runs {
		fmt.Fprintf(tw, "%s\t%.0f\t%.1f\t%.1f\t%.3f\t%.3f\t%.3f\t%.2f%%\t\n", r.Mode, r.Select.MeanTokens, r.Select.MeanTools, r.Select.MeanListed, r.Select.RecallSchema, r.Select.RecallListed, r.Select.Recall, 100*r.Select.Reduction)
	}
	tw.Flush()
	fmt.Fprintln(w, "(gold with schema: sent callable at once; gold listed: sent by name and a line only, its parameters a search_tools step away; gold recall: both)")
}

func writePlot(path string, rep evalReport, o evalOptions) error {
	d := plotData{
		Title:     plotTitle(o),
		Subtitle:  fmt.Sprintf("%s tools, %s queries · %s · budget %s tokens of tool definitions per step (%s)", thousands(float64(rep.Tools)), thousands(float64(rep.Queries)), rep.Embedder, thousands(float64(rep.Budget)), rep.Encoding),
		Budget:    rep.Budget,
		Tools:     rep.Tools,
		AllTokens: rep.AllToolsTokens,
	}
	for _, k := range rep.Runs[0].AtK {
		d.Ks = append(d.Ks, k.K)
	}
	for _, r := range rep.Runs {
		m := plotMode{Name: r.Mode, StepTokens: r.Select.MeanTokens, StepTools: r.Select.MeanTools, GoldKept: r.Select.RecallSchema, GoldListed: r.Select.RecallListed}
		for _, k := range r.AtK {
			m.Recall = append(m.Recall, k.Recall)
		}
		if len(r.AtK) > 0 {
			m.TopTokens = r.AtK[len(r.AtK)-1].Tokens
		}
		d.Modes = append(d.Modes, m)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := writeSVG(f, d); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(i, 0)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func fmtMS(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%.2fs", v/1000)
	}
	return fmt.Sprintf("%.2fms", v)
}

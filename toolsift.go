package toolsift

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolsift/toolsift/budget"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/encoder"
	"github.com/toolsift/toolsift/internal/hashcache"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/toolindex"
	"github.com/toolsift/toolsift/upstream"
	"github.com/toolsift/toolsift/usage"
)

// ErrOptions reports invalid Options.
var ErrOptions = errors.New("toolsift: invalid options")

// Options configure Open, OpenConfig, OpenHub and New. The zero value (or
// nil) gives the measured defaults: the built-in offline embedders (hashed
// n-grams and Universal Sentence Encoder Lite, DefaultEmbedders) beside
// BM25F, o200k_base, a 4,000-token tool budget filled from the best 20
// ranked tools and, in the room they leave, the next 30 at cheaper tiers
// (think.DefaultBudget, think.DefaultK, think.DefaultPack), search_tools
// whenever a tool is left out, and the cache in
// os.UserCacheDir()/toolsift. The rest of a step (search mode, packing,
// listings, policy, prices, ranking) is set on a Think step of your own:
// Thinker.
type Options struct {
	// Embedder embeds tools and queries for the vector signal; nil means
	// the built-in hashed n-grams (toolindex.NewLocalEmbedder).
	Embedder toolindex.Embedder
	// Semantic is the sentence encoder of the semantic signal
	// (toolindex.Options.Semantic: each tool's name and description,
	// matched by meaning rather than words). nil means the built-in
	// Universal Sentence Encoder Lite (encoder.NewUSE, offline) when
	// Embedder is nil too, and no semantic signal when Embedder is set (a
	// model given as Embedder is one already); NoSemantic turns it off.
	// Its vectors are cached (see the package doc), so only new tools cost
	// their encoding.
	Semantic   toolindex.Embedder
	NoSemantic bool
	// Encoding is the tiktoken encoding that counts the budget
	// ("o200k_base", "cl100k_base", ...); empty means o200k_base.
	Encoding string
	// Budget is the most tokens the tool definitions of one step may
	// cost, as the tokenizer counts them; 0 means think.DefaultBudget
	// (4,000). K is how many ranked tools a step considers before the
	// budget decides which are sent; 0 means think.DefaultK (20).
	Budget, K int
	// Store keeps what the Toolset and its Hub keep between runs and share
	// with other processes (see the package doc): the Toolset's tool
	// vectors and token costs (vectors/, tokens/), its usage memory
	// (usage/, see Usage) and, for Open and
	// OpenConfig, the Hub's tool lists (catalog/) and trust records
	// (trust/). nil means the Hub's store with OpenHub (upstream.Hub.Store),
	// else upstream.DefaultStore(), the folder os.UserCacheDir()/toolsift
	// (nothing kept, with a warning, when there is none). store.NewMemory()
	// keeps nothing past this process: every server starts at Open, and
	// the vectors and token costs, which the index holds anyway, are not
	// copied into it. The Toolset does not close it.
	Store store.Store
	// OnChange, if set, hears each change to the catalog once the index
	// holds it (Get, Tools, Search and Think see it): a server's tools
	// after Open returned, when it re-lists (tools/list_changed, Refresh),
	// goes down (its tools Removed) or comes back (not for New). It is
	// called one change at a time, on the Hub's goroutine for that server:
	// it must not block or call back into the Hub. A proxy uses it to
	// bring its clients' tool lists up to date.
	OnChange func(tool.Change)
	// Inputs are the values of a config's ${input:ID} variables (VS Code's
	// "inputs"; Open only). They are secrets: never logged or printed.
	Inputs map[string]string
	// Pin lists tools offered at every step whatever the query (the
	// Think step's retrieval.Options.Pinned): names as Tools lists them
	// (server__tool) or globs ("github__*", path.Match). Open, OpenConfig
	// and OpenHub add what the config pins: every tool of a server with "alwaysLoad":
	// true, and a server's "alwaysLoadTools" (its own tool names, or
	// globs). See Pins for the rule. Pins are resolved against the catalog
	// when Open (or New) returns; a pin that matches no tool is a warning
	// naming it (Warnings). Over a Hub of HubOptions.Background (OpenHub)
	// that catalog is what the cache held (a pin of a server still
	// connecting is such a warning), and pins are resolved again as each
	// server joins.
	Pin []string
	// Logger receives diagnostics. Open and OpenConfig make it the Hub's
	// logger too. nil writes warnings to stderr, each once, so that
	// nothing fails unseen: the Hub's (Open and OpenConfig), a server that
	// failed at Open (naming it and its error; the others work as usual),
	// a config line that was ignored, a pin that matches nothing; other
	// records are dropped. A Logger of yours gets those diagnostics; the
	// rest is yours to read from Status and Warnings, as toolbench and
	// toolsift serve do. slog.New(slog.DiscardHandler) silences everything.
	Logger *slog.Logger
	// ConnectWait bounds how long a step (Think, Select, Explain), a
	// search (Find, SearchTools) and a Call of a tool the index lacks
	// wait for the servers still connecting for the first time, over a
	// Hub of HubOptions.Background (upstream.Hub.Unlisted): each returns
	// as soon as those servers have listed their tools or failed, and
	// never waits for a server listed from the cache, so a warm start
	// waits for nothing. A Call waits only for the server its name
	// stands for. What is still connecting after the wait, and what
	// failed, is named in the answer (think.Incomplete). 0 means
	// DefaultConnectWait (5s); negative means never wait: answer at once
	// with what is listed, and say so.
	ConnectWait time.Duration
	// Usage configures the usage memory, on unless NoUsage: the Toolset
	// remembers which tools requests led to (Record, which makes it an
	// agent.Recorder) and ranks
	// with it at every Think step, Select, Search, SearchTools, Find and
	// Explain, so that a request like an earlier one, in other words,
	// finds the tool that one led to (see package usage). It is kept per
	// scope (usage.WithCaller on the ctx of Record and of the ranking;
	// one scope "" without), bounded and decaying (usage.Options; nil
	// means usage's defaults: 4,096 calls and 4 MiB per scope, a 30-day
	// half-life, requests kept as vectors and hashed terms, never text),
	// and kept in Store under "usage/", one value per scope, written
	// within a second of a call and at Close, read at Open and, over a
	// store.Watcher, again whenever another process writes it. NoUsage
	// turns it off: nothing is recorded, read or ranked with.
	Usage   *usage.Options
	NoUsage bool
	// Thinker, when set, is the Think step, built with think.New over a
	// toolindex.Index of yours: the Toolset indexes its tools into that
	// index (think.Thinker.Index) and thinks with it. Its budget, K,
	// tokenizer, embedders, search mode, packing, listings, policy and
	// prices are its own, as are its caches (toolindex.Options.Cache,
	// think.Options.Costs): Budget, K, Encoding, Embedder, Semantic and
	// NoSemantic set beside it are an error, and Store keeps only the
	// Hub's records. The Toolset's pins (Pin, the config's) are added to
	// the Thinker's own (think.Thinker.WithPinned). The usage memory is the
	// Thinker's (its retrieval.Options.Usage; none when it has none):
	// Record records into it, and the Toolset does not keep it in Store.
	// Give each Toolset a Thinker of its own.
	Thinker *think.Thinker
}

// A Toolset is every tool of a set of MCP servers (and local Go functions),
// indexed and ready for an agent: it lists, searches, chooses the tools of
// a step (Think) and calls them. Its index follows the servers: a server
// that connects, notifies tools/list_changed, restarts or goes away changes
// it. agent.New accepts a *Toolset as it is. It is safe for concurrent use.
type Toolset struct {
	hub      *upstream.Hub // nil for a Toolset made by New
	ix       *toolindex.Index
	base     *think.Thinker                // Options.Thinker, or the one made for Options
	th       atomic.Pointer[think.Thinker] // base, with the pins once they resolve (pins.go)
	store    store.Store                   // what the Toolset and its Hub keep
	caches   []*hashcache.Cache            // vectors and token costs: none over a Memory store; Options.Thinker's own
	opened   atomic.Bool                   // Open has connected
	warnings []string
	pins     Pins       // what is pinned, resolved again as servers join
	pinMu    sync.Mutex // guards pinned and the Thinker's replacement
	pinned   []string   // resolved pins, sorted
	log      *slog.Logger
	// warnFailed: the Logger is the stderr default, which also hears of
	// failed servers, config warnings and pins that match nothing (a
	// caller with a Logger reads them from Status and Warnings).
	warnFailed bool
	onChange   func(tool.Change) // Options.OnChange
	wait       time.Duration     // Options.ConnectWait, resolved; negative: never
	learn      *learner          // the usage memory; nil when off
}

// Open loads the mcpServers config file at path (Claude Desktop, Claude
// Code, Cursor and VS Code forms; see docs/config.md), connects to its
// servers and returns when every server that connected has its tools in
// the index. Its Hub has upstream's defaults (timeouts, lazy start, limits)
// with the Toolset's Store and Logger; for others, make the Hub yourself
// and open it with OpenHub. A server that fails does not fail Open: Status
// reports it with its reason and stderr tail. Open fails on a config that
// cannot be read, on invalid Options (ErrOptions), or when ctx ends first.
func Open(ctx context.Context, path string, opts *Options) (*Toolset, error) {
	var inputs map[string]string
	if opts != nil {
		inputs = opts.Inputs
	}
	cfg, err := config.Load(path, &config.Options{Inputs: inputs})
	if err != nil {
		return nil, err
	}
	return OpenConfig(ctx, cfg, opts)
}

// OpenConfig is Open with a config built in code, where MCP servers and
// local Go functions (upstream.LocalServer) mix: every tool is listed and called
// the same way, whatever is behind it. It builds the Toolset as New does,
// then feeds its index from a Hub over cfg, as OpenHub does.
func OpenConfig(ctx context.Context, cfg *config.Config, opts *Options) (*Toolset, error) {
	ts, o, err := newToolset(opts, defaultDir)
	if err != nil {
		return nil, err
	}
	hub, err := upstream.NewHub(cfg, &upstream.HubOptions{Store: ts.store, Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	return ts.open(ctx, hub, o)
}

// OpenHub is OpenConfig over a Hub of yours, made with upstream.NewHub and
// not yet connected: its HubOptions are yours (timeouts, Progress,
// Background, Auth, lazy start, limits, a proxy's hooks). OpenHub connects
// it with the Toolset's change sink (upstream.Hub.Connect) and returns when
// every server that connected has its tools in the index (with
// HubOptions.Background, when every server listed from the cache has; the
// others join as they list: see the package doc, "Opening in the
// background"). The config's warnings and pins are the Hub's config's
// (upstream.Hub.Config). From the call on the Toolset owns the Hub: Close
// closes it, as does OpenHub when it fails. The Hub logs to its own
// HubOptions.Logger, and servers that fail after OpenHub returned are the
// Hub's to report (Status, HubOptions.Progress). It fails as OpenConfig
// does, and with an error wrapping upstream.ErrOptions for a Hub connected
// before.
func OpenHub(ctx context.Context, hub *upstream.Hub, opts *Options) (*Toolset, error) {
	if hub == nil {
		return nil, fmt.Errorf("%w: OpenHub: nil Hub", ErrOptions)
	}
	ts, o, err := newToolset(opts, func() (store.Store, error) { return hub.Store(), nil })
	if err != nil {
		return nil, errors.Join(err, hub.Close())
	}
	return ts.open(ctx, hub, o)
}

// open connects hub, the Toolset's from now on, with the Toolset's change
// sink, then resolves the pins and ends the construction.
func (ts *Toolset) open(ctx context.Context, hub *upstream.Hub, o Options) (*Toolset, error) {
	ts.hub = hub
	cfg := hub.Config()
	if cfg != nil {
		ts.warnings = slices.Clone(cfg.Warnings)
	}
	if ts.warnFailed {
		for _, w := range ts.warnings {
			ts.log.Warn("toolsift: config", "warning", w)
		}
	}
	if err := hub.Connect(ctx, ts.apply); err != nil {
		return nil, errors.Join(err, hub.Close())
	}
	if err := ts.pin(configPins(cfg, o.Pin)); err != nil {
		return nil, errors.Join(err, hub.Close())
	}
	ts.ready()
	if ts.warnFailed {
		ts.warnFailedServers()
	}
	return ts, nil
}

// warnFailedServers warns of each failed server, for a Toolset whose Logger
// is the stderr default.
func (ts *Toolset) warnFailedServers() {
	for _, st := range ts.hub.Status() {
		if st.State == upstream.StateFailed {
			ts.log.Warn("toolsift: server failed; its tools are not offered (Toolset.Status has its stderr tail)", "server", st.Name, "error", st.Err)
		}
	}
}

// New returns a Toolset over a fixed list of tools, with no servers behind
// them: it lists, searches and thinks exactly as a Toolset from Open does
// (the same embedders, cache, tokenizer and Think options, or the same
// Options.Thinker), and Call fails with an error wrapping
// tool.ErrUnavailable: catalogs read from files are measured this way.
// Options.Inputs does not apply. New fails on invalid Options (ErrOptions), or when
// the tools cannot be indexed (toolindex.ErrInvalidTool, an embedder's
// error, or ctx's).
func New(ctx context.Context, tools []tool.Tool, opts *Options) (*Toolset, error) {
	ts, o, err := newToolset(opts, defaultDir)
	if err != nil {
		return nil, err
	}
	if _, err := ts.ix.Upsert(ctx, tools...); err != nil {
		return nil, fmt.Errorf("toolsift: index %d tools: %w", len(tools), err)
	}
	if err := ts.pin(Pins{Tools: o.Pin}); err != nil {
		return nil, err
	}
	ts.ready()
	return ts, nil
}

// newToolset is the one wiring of the library: the options resolved, the
// cache, the index over the embedders and the Think step. The Toolset has
// no tools and no Hub yet. defaultStore is the store when Options.Store is
// nil.
func newToolset(opts *Options, defaultStore func() (store.Store, error)) (*Toolset, Options, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if err := o.checkThinker(); err != nil {
		return nil, o, err
	}
	switch {
	case o.Budget < 0:
		return nil, o, fmt.Errorf("%w: Budget = %d, want a positive number of tokens (0 for think.DefaultBudget)", ErrOptions, o.Budget)
	case o.K < 0:
		return nil, o, fmt.Errorf("%w: K = %d, want a positive number of tools (0 for think.DefaultK)", ErrOptions, o.K)
	}
	warnFailed := o.Logger == nil
	if o.Logger == nil {
		o.Logger = slog.New(newStderrWarnings(os.Stderr))
	}
	for _, p := range o.Pin {
		if _, err := path.Match(p, ""); err != nil {
			return nil, o, fmt.Errorf("%w: Pin %q: %w", ErrOptions, p, err)
		}
	}
	ts := &Toolset{store: openStore(o, defaultStore), log: o.Logger, warnFailed: warnFailed, onChange: o.OnChange, wait: o.ConnectWait}
	if ts.wait == 0 {
		ts.wait = DefaultConnectWait
	}
	th := o.Thinker
	if th == nil {
		var err error
		if th, err = ts.newThinker(o); err != nil {
			return nil, o, err
		}
	} else {
		if mem := th.Options().Retrieval.Usage; mem != nil {
			ts.learn = newLearner(mem, nil, o.Logger)
		}
		// A Thinker of the caller's pins what it pins, and its caches are
		// its own, written when the Toolset writes its own (flush) if they
		// are toolsift's.
		o.Pin = append(slices.Clone(th.Options().Retrieval.Pinned), o.Pin...)
		for _, c := range []any{th.Index().VectorCache(), th.Options().Costs} {
			if hc, ok := c.(*hashcache.Cache); ok && !slices.Contains(ts.caches, hc) {
				ts.caches = append(ts.caches, hc)
			}
		}
	}
	ts.ix, ts.base = th.Index(), th
	ts.th.Store(th)
	return ts, o, nil
}

// checkThinker refuses the knobs a Thinker of the caller's already says.
func (o *Options) checkThinker() error {
	if o.Thinker == nil {
		return nil
	}
	var set []string
	for _, k := range []struct {
		name string
		set  bool
	}{
		{"Budget", o.Budget != 0}, {"K", o.K != 0}, {"Encoding", o.Encoding != ""},
		{"Embedder", o.Embedder != nil}, {"Semantic", o.Semantic != nil}, {"NoSemantic", o.NoSemantic},
		{"Usage", o.Usage != nil}, {"NoUsage", o.NoUsage},
	} {
		if k.set {
			set = append(set, k.name)
		}
	}
	if len(set) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s and Thinker: the Thinker has its own (think.Options, and the embedders of its index)", ErrOptions, strings.Join(set, ", "))
}

// newThinker is the Think step of a Toolset without a Thinker of the
// caller's: an index over the embedders of o (DefaultEmbedders when none),
// the vectors and token costs cached in the Toolset's store (but over a
// Memory store: the index holds them), the budget counted in o's
// encoding.
func (ts *Toolset) newThinker(o Options) (*think.Thinker, error) {
	emb, sem := o.Embedder, o.Semantic
	if emb == nil {
		local, use, err := defaultEmbedders(sem == nil && !o.NoSemantic)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrOptions, err)
		}
		emb = local
		if use != nil {
			sem = use
		}
	}
	if o.NoSemantic {
		sem = nil
	}
	ixOpts := toolindex.Options{Semantic: sem}
	to := think.Options{Budget: o.Budget, Retrieval: retrieval.Options{K: o.K}}
	if !o.NoUsage {
		mem, err := usage.New(o.Usage)
		if err != nil {
			return nil, fmt.Errorf("%w: Usage: %w", ErrOptions, err)
		}
		ts.learn = newLearner(mem, ts.store, o.Logger)
		to.Retrieval.Usage = mem
	}
	inner := ts.store
	if u, ok := inner.(interface{ Unwrap() store.Store }); ok {
		inner = u.Unwrap() // an instrumented store (gateway.InstrumentStore) over memory is memory too
	}
	if _, mem := inner.(*store.Memory); !mem {
		derived := hashcache.New(ts.store)
		log := o.Logger
		derived.OnError = func(err error) { log.Warn("toolsift: cache", "error", err) }
		ts.caches = []*hashcache.Cache{derived}
		ixOpts.Cache, to.Costs = derived, derived
	}
	ix, err := toolindex.New(emb, &ixOpts)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOptions, err)
	}
	if o.Encoding != "" {
		if to.Tokenizer, err = budget.NewTokenizer("", o.Encoding); err != nil {
			return nil, fmt.Errorf("%w: encoding %q: %w", ErrOptions, o.Encoding, err)
		}
	}
	th, err := think.New(ix, &to)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOptions, err)
	}
	return th, nil
}

// DefaultEmbedders returns the embedders a Toolset indexes with when
// Options name none: hashed n-grams for the vector signal
// (toolindex.NewLocalEmbedder) and Universal Sentence Encoder Lite for the
// semantic one (encoder.NewUSE), both offline. An index of yours built
// over them (Options.Thinker) ranks as a Toolset's does by default.
func DefaultEmbedders() (vector, semantic toolindex.Embedder, err error) {
	local, use, err := defaultEmbedders(true)
	if err != nil {
		return nil, nil, err
	}
	return local, use, nil
}

// defaultEmbedders makes the default embedders: the semantic one only
// when semantic is set (nil otherwise).
func defaultEmbedders(semantic bool) (*toolindex.LocalEmbedder, toolindex.Embedder, error) {
	local, err := toolindex.NewLocalEmbedder(nil)
	if err != nil {
		return nil, nil, fmt.Errorf("embedder: %w", err)
	}
	if !semantic {
		return local, nil, nil
	}
	use, err := encoder.NewUSE(nil)
	if err != nil {
		return nil, nil, fmt.Errorf("semantic embedder: %w", err)
	}
	return local, use, nil
}

// ready ends the Toolset's construction: from now on a change of the
// index updates the catalog's cost and the cache at once. The catalog's
// cost and the index of server documents are made (or found in the cache)
// now, not at the first Think step.
func (ts *Toolset) ready() {
	if ts.learn != nil {
		ts.learn.start()
	}
	ts.opened.Store(true)
	ts.prepare()
	ts.flush()
}

// prepare makes the catalog's cost and the server documents of the
// Thinker (a failure is the first step's to report).
func (ts *Toolset) prepare() {
	th := ts.th.Load()
	th.CatalogCost()
	_ = th.Retriever().Prepare(context.Background())
}

// apply is the Hub's change sink: the change goes into the index, and once
// Open has returned, the catalog's cost is brought up to date and what was
// derived anew is written to the cache. While Open connects, both wait for
// the end of Connect, so that the cache is written once, not per server.
func (ts *Toolset) apply(ctx context.Context, c tool.Change) error {
	if err := ts.ix.Apply(ctx, c); err != nil {
		return err
	}
	if ts.opened.Load() {
		if len(c.Added) > 0 {
			ts.repin()
		}
		ts.th.Load().CatalogCost()
		ts.flush()
		if ts.onChange != nil {
			ts.onChange(c)
		}
	}
	return nil
}

// flush writes what was derived anew (tool vectors, token costs) to the
// store; a failure is logged by the cache.
func (ts *Toolset) flush() {
	for _, c := range ts.caches {
		ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
		_ = c.Flush(ctx)
		cancel()
	}
}

// defaultDir is the store of the Toolsets that are not over a Hub of the
// caller's: the folder a Hub opens by default (upstream.DefaultStore).
func defaultDir() (store.Store, error) {
	d, err := upstream.DefaultStore()
	if err != nil {
		return nil, err
	}
	return d, nil
}

// flushTimeout bounds one write of the derived cache (a shared store that
// hangs must not hang Open, a change or Close).
const flushTimeout = time.Minute

// openStore returns the store the options name, or the default one: the
// Hub's (OpenHub), or the folder a Hub would open (upstream.DefaultStore),
// so that both keep their records in one; a Memory store, with a warning,
// when there is no user cache folder.
func openStore(o Options, defaultStore func() (store.Store, error)) store.Store {
	if o.Store != nil {
		return o.Store
	}
	d, err := defaultStore()
	if err != nil {
		o.Logger.Warn("toolsift: no cache folder; nothing is kept past this run", "error", err)
		return store.NewMemory()
	}
	return d
}

// Tools returns every indexed tool, sorted by name.
func (ts *Toolset) Tools() []tool.Tool { return slices.Collect(ts.ix.All()) }

// Get returns the indexed tool with that name.
func (ts *Toolset) Get(name string) (tool.Tool, bool) { return ts.ix.Get(name) }

// Generation counts the changes of the catalog: it moves whenever a tool
// is added, changed or removed (toolindex.Index.Generation), so that what
// is derived from Tools can be kept until it does.
func (ts *Toolset) Generation() uint64 { return ts.ix.Generation() }

// Search returns the k tools that best match query, best first, each with
// its score and (in Tool.Server) its server: see retrieval.Retriever.Search.
// An empty query or k < 1 is an error wrapping retrieval.ErrSearch; fewer
// than k come back when the catalog is smaller.
func (ts *Toolset) Search(ctx context.Context, query string, k int) ([]retrieval.Match, error) {
	return ts.th.Load().Retriever().Search(ctx, query, k)
}

// Think chooses the tools of one agent step within the budget (see
// think.Thinker.Think).
//
// Over a Hub of HubOptions.Background it first waits for the servers
// still connecting (Options.ConnectWait), and Offer.Incomplete names those
// it could not wait for and those that failed.
func (ts *Toolset) Think(ctx context.Context, req think.Request) (think.Offer, error) {
	in := ts.await(ctx)
	off, err := ts.th.Load().Think(ctx, req)
	off.Incomplete = in
	return off, err
}

// Explain answers "why was my tool (not) offered?" for one step: it runs
// Think for req and says, for each tool named (or, with none, each tool
// the step considered), its fused and per-signal rank and score (BM25F,
// n-gram vectors, semantic vectors), whether it was pinned or sticky, and
// the decision: offered (reason, tier, tokens), not in the catalog (with
// the closest names), not reached by any signal, ranked below K, under
// the MinScore threshold, larger than the whole budget, or cut by the
// budget and by how many tokens (see think.Thinker.Explain).
//
// It waits for servers still connecting as Think does, and its
// Offer.Incomplete names them the same way.
func (ts *Toolset) Explain(ctx context.Context, req think.Request, tools ...string) (think.Explanation, error) {
	in := ts.await(ctx)
	ex, err := ts.th.Load().Explain(ctx, req, tools...)
	ex.Offer.Incomplete = in
	return ex, err
}

// SearchTools answers the search_tools meta-tool, whose JSON arguments the
// model wrote, for a loop that offers the found tools at its next step:
// Search with the model's rules and messages (see
// think.Thinker.SearchTools). Bad arguments are an error wrapping
// think.ErrSearchArgs, whose text the model is meant to see.
//
// It waits for servers still connecting as Think does; those it could not
// wait for, and those that failed, are named in the answer's
// "incomplete" member (think.Incomplete.AddTo), so that the model is not
// told a tool is missing while its server connects.
func (ts *Toolset) SearchTools(ctx context.Context, args json.RawMessage) (string, []retrieval.Match, error) {
	in := ts.await(ctx)
	answer, matches, err := ts.th.Load().SearchTools(ctx, args)
	if err != nil {
		return answer, matches, err
	}
	return in.AddTo(answer), matches, nil
}

// Find answers a search_tools call with the found tools' schemas fitted to
// tokens (0: the step's budget), for a client with no Think step to offer
// them at its next one (a proxy's): see think.Thinker.Find, whose skip
// names the tools not to rank at all.
//
// It waits for servers still connecting as Think does, and
// SearchAnswer.Incomplete names those it could not wait for and those
// that failed: only those in ctx's scope (upstream.WithServerScope).
func (ts *Toolset) Find(ctx context.Context, query string, k, tokens int, skip func(name string) bool) (think.SearchAnswer, []tool.Tool, error) {
	in := ts.await(ctx)
	ans, found, err := ts.th.Load().Find(ctx, query, k, tokens, skip)
	ans.Incomplete = in
	return ans, found, err
}

// Call calls a tool by name (see upstream.Hub.Call): a tool's own failure is a
// Result with IsError set; an error wraps tool.ErrUnknown,
// tool.ErrUnavailable or tool.ErrInvalidArguments and names the tool and
// server.
//
// A name the index lacks whose server is still connecting (its qualified
// prefix, server__) is waited for, as Options.ConnectWait says, before it
// is called; when the server has still not listed it then, the error
// wraps tool.ErrUnavailable and says the server is still connecting.
//
// A Toolset made by New has no servers: Call fails with tool.ErrUnknown for
// a name it does not list, and tool.ErrUnavailable for one it does.
func (ts *Toolset) Call(ctx context.Context, name string, args json.RawMessage) (tool.Result, error) {
	if ts.hub == nil {
		if _, ok := ts.ix.Get(name); !ok {
			return tool.Result{}, fmt.Errorf("%w: %q", tool.ErrUnknown, name)
		}
		return tool.Result{}, fmt.Errorf("%w: call %s: this Toolset was made by toolsift.New from a list of tools, with no server to call", tool.ErrUnavailable, name)
	}
	var still []string
	if _, ok := ts.ix.Get(name); !ok {
		still = ts.waitFor(ctx, name)
	}
	res, err := ts.hub.Call(ctx, name, args)
	if len(still) > 0 && errors.Is(err, tool.ErrUnknown) {
		return res, fmt.Errorf("%w: call %s: server %s is still connecting: its tools are not listed yet; try again in a few seconds", tool.ErrUnavailable, name, still[0])
	}
	return res, err
}

// Status reports every configured server: state, reason of a failure,
// stderr tail, tool count, and ApplyErr when its tools could not be
// indexed.
// A Toolset made by New has none.
func (ts *Toolset) Status() []upstream.ServerStatus {
	if ts.hub == nil {
		return nil
	}
	return ts.hub.Status()
}

// Warnings lists what the config loader ignored, each naming file, line,
// server and field, then the pins that match no tool, each naming the pin.
func (ts *Toolset) Warnings() []string { return slices.Clone(ts.warnings) }

// Refresh lists every server's tools again and returns when the index has
// the result (at once for a Toolset made by New).
func (ts *Toolset) Refresh(ctx context.Context) error {
	if ts.hub == nil {
		return nil
	}
	return ts.hub.Refresh(ctx)
}

// Close stops every server and writes what is new to the cache and the
// usage memory to the store.
func (ts *Toolset) Close() error {
	var err error
	if ts.hub != nil {
		err = ts.hub.Close()
	}
	ts.flush()
	if ts.learn != nil {
		ts.learn.close()
	}
	return err
}

package toolsift

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"

	"github.com/toolsift/toolsift/budget"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/encoder"
	"github.com/toolsift/toolsift/internal/cachefile"
	"github.com/toolsift/toolsift/mcp"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/toolindex"
)

// ErrOptions reports invalid Options.
var ErrOptions = errors.New("toolsift: invalid options")

// Options configure Open. The zero value (or nil) gives the measured
// defaults: the built-in offline embedders (hashed n-grams and Universal
// Sentence Encoder Lite) beside BM25F, o200k_base, a 4,000-token tool
// budget filled from the best 20 ranked tools (think.DefaultBudget,
// think.DefaultK), search_tools whenever a tool is left out.
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
	// their encoding, 1.5–3 ms of CPU each with AVX-512.
	Semantic   toolindex.Embedder
	NoSemantic bool
	// Encoding is the tiktoken encoding that counts the budget
	// ("o200k_base", "cl100k_base", ...); empty means o200k_base.
	Encoding string
	// Think sets the budget, retrieval depth and search_tools policy of
	// each step. Its Tokenizer, when nil, is made from Encoding.
	Think think.Options
	// Hub sets timeouts, concurrency and the protocol revision of the MCP
	// connections, Progress hears how far Open's connecting is (a caller
	// has no Toolset to look at until then), and CacheDir and NoCache also
	// decide where the Toolset caches tool vectors and token costs (see the
	// package doc). Its OnChange must be nil: the Toolset keeps its index
	// current itself.
	Hub mcp.HubOptions
	// Inputs are the values of a config's ${input:ID} variables (VS Code's
	// "inputs"). They are secrets: never logged or printed.
	Inputs map[string]string
	// Logger receives diagnostics; nil discards them. It is also the Hub's
	// logger unless Hub.Logger is set.
	Logger *slog.Logger
}

// A Toolset is every tool of a set of MCP servers (and local Go functions),
// indexed and ready for an agent: it lists, searches, chooses the tools of
// a step (Think) and calls them. Its index follows the servers: a server
// that connects, notifies tools/list_changed, restarts or goes away changes
// it. agent.New accepts a *Toolset as it is. It is safe for concurrent use.
type Toolset struct {
	hub      *mcp.Hub
	ix       *toolindex.Index
	th       *think.Thinker
	store    *cachefile.Store // nil when the cache is off
	opened   atomic.Bool      // Open has connected
	warnings []string
}

// Open loads the mcpServers config file at path (Claude Desktop, Claude
// Code, Cursor and VS Code forms; see docs/config.md), connects to its
// servers and returns when every server that connected has its tools in
// the index. A server that fails does not fail Open: Status reports it
// with its reason and stderr tail. Open fails on a config that cannot be
// read, on invalid Options, or when ctx ends first.
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
// local Go functions (mcp.LocalServer) mix: every tool is listed and called
// the same way, whatever is behind it.
func OpenConfig(ctx context.Context, cfg *config.Config, opts *Options) (*Toolset, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Hub.OnChange != nil {
		return nil, fmt.Errorf("%w: Hub.OnChange is the Toolset's own", ErrOptions)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Hub.Logger == nil {
		o.Hub.Logger = o.Logger
	}
	emb, sem := o.Embedder, o.Semantic
	if emb == nil {
		local, err := toolindex.NewLocalEmbedder(nil)
		if err != nil {
			return nil, fmt.Errorf("%w: embedder: %w", ErrOptions, err)
		}
		emb = local
		if sem == nil && !o.NoSemantic {
			use, err := encoder.NewUSE(nil)
			if err != nil {
				return nil, fmt.Errorf("%w: semantic embedder: %w", ErrOptions, err)
			}
			sem = use
		}
	}
	if o.NoSemantic {
		sem = nil
	}
	ts := &Toolset{store: openStore(o)}
	ixOpts := toolindex.Options{Semantic: sem}
	if ts.store != nil {
		ixOpts.Cache = ts.store
		if o.Think.Costs == nil {
			o.Think.Costs = ts.store
		}
	}
	ix, err := toolindex.New(emb, &ixOpts)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOptions, err)
	}
	th, err := newThinker(ix, o)
	if err != nil {
		return nil, err
	}
	ts.ix, ts.th = ix, th
	hubOpts := o.Hub
	hubOpts.OnChange = ts.apply
	hub, err := mcp.NewHub(cfg, &hubOpts)
	if err != nil {
		return nil, err
	}
	ts.hub = hub
	if cfg != nil {
		ts.warnings = slices.Clone(cfg.Warnings)
	}
	if err := hub.Connect(ctx); err != nil {
		_ = hub.Close()
		return nil, err
	}
	ts.opened.Store(true)
	// The catalog's cost is counted (or found in the cache) now, not at
	// the first Think step.
	th.CatalogCost()
	ts.flush()
	return ts, nil
}

// apply is the Hub's OnChange: the change goes into the index, and once
// Open has returned, the catalog's cost is brought up to date and what was
// derived anew is written to the cache. While Open connects, both wait for
// the end of Connect, so that the cache is written once, not per server.
func (ts *Toolset) apply(ctx context.Context, c tool.Change) error {
	if err := ts.ix.Apply(ctx, c); err != nil {
		return err
	}
	if ts.opened.Load() {
		ts.th.CatalogCost()
		ts.flush()
	}
	return nil
}

// flush writes what was derived anew (tool vectors, token costs) to the
// cache; a failure is logged by the store.
func (ts *Toolset) flush() {
	if ts.store != nil {
		_ = ts.store.Flush()
	}
}

// openStore returns the cache of derived data in the Hub's cache folder,
// or nil when the cache is off (Hub.NoCache) or there is no user cache
// folder.
func openStore(o Options) *cachefile.Store {
	dir, err := o.Hub.CacheFolder()
	if err != nil || dir == "" {
		return nil
	}
	s := cachefile.NewStore(dir)
	log := o.Logger
	s.OnError = func(err error) { log.Warn("toolsift: cache", "error", err) }
	return s
}

func newThinker(ix *toolindex.Index, o Options) (*think.Thinker, error) {
	to := o.Think
	if to.Tokenizer == nil {
		tok, err := budget.NewTokenizer("", o.Encoding)
		if err != nil {
			return nil, fmt.Errorf("%w: encoding %q: %w", ErrOptions, o.Encoding, err)
		}
		to.Tokenizer = tok
	}
	th, err := think.New(ix, &to)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOptions, err)
	}
	return th, nil
}

// Tools returns every indexed tool, sorted by name.
func (ts *Toolset) Tools() []tool.Tool { return slices.Collect(ts.ix.All()) }

// Get returns the indexed tool with that name.
func (ts *Toolset) Get(name string) (tool.Tool, bool) { return ts.ix.Get(name) }

// Search returns the k tools that best match query, best first.
func (ts *Toolset) Search(ctx context.Context, query string, k int) ([]retrieval.Match, error) {
	args, err := json.Marshal(retrieval.SearchArgs{Query: query, K: k})
	if err != nil {
		return nil, err
	}
	_, found, err := ts.th.Retriever().SearchTools(ctx, args)
	return found, err
}

// Think chooses the tools of one agent step within the budget (see
// think.Thinker.Think).
func (ts *Toolset) Think(ctx context.Context, req think.Request) (think.Offer, error) {
	return ts.th.Think(ctx, req)
}

// SearchTools answers the search_tools meta-tool.
func (ts *Toolset) SearchTools(ctx context.Context, args json.RawMessage) (string, []retrieval.Match, error) {
	return ts.th.Retriever().SearchTools(ctx, args)
}

// Call calls a tool by name (see mcp.Hub.Call): a tool's own failure is a
// Result with IsError set; an error wraps tool.ErrUnknown,
// tool.ErrUnavailable or tool.ErrInvalidArguments and names the tool and
// server.
func (ts *Toolset) Call(ctx context.Context, name string, args json.RawMessage) (tool.Result, error) {
	return ts.hub.Call(ctx, name, args)
}

// Status reports every configured server: state, reason of a failure,
// stderr tail, tool count, and ApplyErr when its tools could not be
// indexed.
func (ts *Toolset) Status() []mcp.ServerStatus { return ts.hub.Status() }

// Warnings lists what the config loader ignored, each naming file, line,
// server and field.
func (ts *Toolset) Warnings() []string { return slices.Clone(ts.warnings) }

// Refresh lists every server's tools again and returns when the index has
// the result.
func (ts *Toolset) Refresh(ctx context.Context) error { return ts.hub.Refresh(ctx) }

// Close stops every server.
func (ts *Toolset) Close() error {
	err := ts.hub.Close()
	ts.flush()
	return err
}

// Index returns the Toolset's index, for measurement and persistence.
func (ts *Toolset) Index() *toolindex.Index { return ts.ix }

// Thinker returns the Toolset's Think step, for measurement.
func (ts *Toolset) Thinker() *think.Thinker { return ts.th }

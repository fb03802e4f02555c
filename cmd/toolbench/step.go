package main

import (
	"log/slog"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/internal/hashcache"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/toolindex"
	"github.com/toolsift/toolsift/upstream"
)

// stepThinker returns the Think step of a command that measures or runs
// one (eval, explain, run), for opts.Thinker: a Thinker with o over an
// index of emb and sem (the library's defaults, toolsift.DefaultEmbedders,
// when emb is nil). Its tool vectors and token costs are cached as a
// Toolset caches its own, in opts.Store (the user cache folder when it
// names none, which opts.Store then holds, so that the Hub keeps its lists
// there too; nothing over a Memory store), and the Toolset writes them.
func stepThinker(e *env, opts *toolsift.Options, emb, sem toolindex.Embedder, o think.Options) (*think.Thinker, error) {
	if emb == nil {
		var err error
		if emb, sem, err = toolsift.DefaultEmbedders(); err != nil {
			return nil, err
		}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(warnHandler{e})
	}
	if opts.Store == nil {
		d, err := upstream.DefaultStore()
		if err != nil {
			log.Warn("toolsift: no cache folder; nothing is kept past this run", "error", err)
			opts.Store = store.NewMemory()
		} else {
			opts.Store = d
		}
	}
	ixOpts := toolindex.Options{Semantic: sem}
	if _, mem := opts.Store.(*store.Memory); !mem {
		c := hashcache.New(opts.Store)
		c.OnError = func(err error) { log.Warn("toolsift: cache", "error", err) }
		ixOpts.Cache, o.Costs = c, c
	}
	ix, err := toolindex.New(emb, &ixOpts)
	if err != nil {
		return nil, err
	}
	return think.New(ix, &o)
}

package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"sync"

	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/tool"
)

// Replicas: several Hubs (toolsift serve processes) over one shared store
// (a store.Watcher, such as PostgreSQL) share each server's tool list
// (catalog/) and trust records (trust/). Trust records need nothing more:
// every Hub compares what it lists with the same records (and ReloadTrust
// reads them again when another wrote them). A tool list does: a Hub whose
// server is lazy (its list read from the cache at start, not connected)
// or whose upstream session was never told (a missed tools/list_changed)
// would go on serving a list another replica has seen change upstream, a
// changed tool served as the trusted one. So when another process writes
// a server's cache entry whose tools differ from what this Hub has, the
// Hub lists that server itself (starting it when it is lazy, trying it
// again when this Hub had given up on it: the other replica reached it):
// it never takes a stored list for the upstream's word, and the listing
// is verified against the shared trust records as any is. A listing that
// still differs from the entry (two replicas that see two lists) does not
// bounce: an entry is acted on once.

// catalogWatch is what the watch of cache entries knows: the key of each
// server's entry, the servers whose entry another process wrote and that
// wait to be looked at, and the last entry acted on per server.
type catalogWatch struct {
	h    *Hub
	keys map[string]*server // catalogKey → server; read-only once built

	mu      sync.Mutex
	pending map[*server]bool
	wake    chan struct{} // buffered, 1
	acted   map[*server]string
}

// watchCatalog starts, when h's store is a store.Watcher, the watch of the
// cache entries of h's servers (their fingerprints are set by
// readCatalogs). It ends with the Hub.
func watchCatalog(h *Hub) {
	w, ok := h.opts.Store.(store.Watcher)
	if !ok {
		return
	}
	cw := &catalogWatch{h: h, keys: map[string]*server{}, pending: map[*server]bool{}, wake: make(chan struct{}, 1), acted: map[*server]string{}}
	h.mu.Lock()
	for _, s := range h.order {
		if s.lazy.fp != "" && !s.cfg.Disabled {
			cw.keys[s.catalogKey()] = s
		}
	}
	h.mu.Unlock()
	if len(cw.keys) == 0 {
		return
	}
	h.wg.Go(func() {
		err := w.Watch(h.life, "catalog/", func() {
			// Listening now: an entry written since readCatalogs may not
			// be reported. Look at each once.
			cw.mu.Lock()
			for _, s := range cw.keys {
				cw.pending[s] = true
			}
			cw.mu.Unlock()
			select {
			case cw.wake <- struct{}{}:
			default:
			}
		}, func(key string) {
			s := cw.keys[key]
			if s == nil {
				return
			}
			cw.mu.Lock()
			cw.pending[s] = true
			cw.mu.Unlock()
			select {
			case cw.wake <- struct{}{}:
			default:
			}
		})
		if h.life.Err() == nil {
			h.opts.Logger.Warn("upstream: watching the tool lists of other replicas ended; each server's list is kept current by its own notifications only", "error", err)
		}
	})
	h.wg.Go(func() {
		for {
			select {
			case <-h.life.Done():
				return
			case <-cw.wake:
			}
			cw.mu.Lock()
			todo := slices.Collect(maps.Keys(cw.pending))
			clear(cw.pending)
			cw.mu.Unlock()
			for _, s := range todo {
				cw.look(s)
			}
		}
	})
}

// look looks at s's cache entry, which another process wrote, and lists s
// here when the entry's tools differ from this Hub's.
func (cw *catalogWatch) look(s *server) {
	h := cw.h
	ctx, cancel := context.WithTimeout(h.life, h.opts.Timeout)
	defer cancel()
	data, err := store.GetBounded(ctx, h.opts.Store, s.catalogKey(), maxCatalogBytes)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) && h.life.Err() == nil {
			h.opts.Logger.Warn("upstream: reading a tool list another replica wrote", "server", s.name, "error", err)
		}
		return
	}
	var e catalogEntry
	if err := json.Unmarshal(data, &e); err != nil || e.check(s.name, s.lazy.fp) != nil {
		return // a foreign or corrupt entry: this Hub's own listing rewrites it
	}
	stored := entryTools(e.Tools)
	h.mu.Lock()
	state := s.state
	mine := entryTools(slices.Collect(maps.Values(s.tools)))
	h.mu.Unlock()
	if stored == mine || cw.acted[s] == stored {
		return
	}
	if state != StateReady && state != StateLazy && state != StateFailed {
		return // connecting, restarting or disabled: its own attempt decides
	}
	cw.acted[s] = stored
	switch state {
	case StateReady:
		h.opts.Logger.Info("upstream: another replica listed tools that differ from this one's; listing the server again", "server", s.name)
		if errs, err := h.relist(ctx, []*server{s}, false); err != nil || errors.Join(errs...) != nil {
			h.opts.Logger.Warn("upstream: listing a server again after another replica's listing", "server", s.name, "error", h.redact.Err(errors.Join(append(errs, err)...)))
		}
	case StateLazy:
		h.opts.Logger.Info("upstream: another replica listed tools that differ from this one's cached list; starting the server to list it", "server", s.name)
		if err := <-startAll(ctx, []*server{s}); err != nil {
			h.opts.Logger.Warn("upstream: starting a server after another replica's listing", "server", s.name, "error", h.redact.Err(err))
		}
	case StateFailed:
		// This Hub gave up on the server (its first connection failed,
		// or its restarts did) and another replica has just listed it: it
		// can be reached now (a per-user server someone logged in to
		// through that replica, a server that was down when this one
		// started). Tried once per new entry, as any listing.
		h.opts.Logger.Info("upstream: another replica listed a server this one failed to; trying it again", "server", s.name)
		if err := h.Retry(ctx, s.name); err != nil {
			h.opts.Logger.Warn("upstream: trying a failed server again after another replica's listing", "server", s.name, "error", h.redact.Err(err))
		}
	}
}

// entryTools is a tool list's identity: its tools' names and content
// hashes, sorted.
func entryTools(tools []tool.Tool) string {
	ids := make([]string, len(tools))
	for i, t := range tools {
		ids[i] = t.Name + " " + t.Hash
	}
	slices.Sort(ids)
	b, _ := json.Marshal(ids)
	return string(b)
}

package upstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/toolsift/toolsift/internal/cachefile"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/tool"
)

// catalogFormat is the version of the cache entry layout; an entry of
// another version is ignored and rewritten.
const catalogFormat = 2

// maxCatalogBytes bounds one server's cache entry (docs/limits.md); a
// larger one is refused and the server started.
const maxCatalogBytes = 64 << 20

// userCacheDir is os.UserCacheDir; tests replace it so that they never
// touch the user's cache.
var userCacheDir = os.UserCacheDir

// dialKey, when set, stands for a server's Dial in its fingerprint: tests
// use it to cache in-memory servers.
var dialKey func(server string) string

// catalogEntry is one cache entry: the tools one server listed, under the
// fingerprint of how it was launched. It holds nothing of the server's
// environment, headers, arguments or URL but that fingerprint.
type catalogEntry struct {
	Format          int       `json:"format"`
	Server          string    `json:"server"`
	Fingerprint     string    `json:"fingerprint"`
	Created         time.Time `json:"created"`
	ProtocolVersion string    `json:"protocol_version,omitempty"`
	ServerName      string    `json:"server_name,omitempty"`
	ServerVersion   string    `json:"server_version,omitempty"`
	// Tools are the allowed tools, sorted by name, with their hashes;
	// Disabled maps the qualified names of the filtered-out ones to their
	// original names, so that calls to them say so.
	Tools    []tool.Tool       `json:"tools"`
	Disabled map[string]string `json:"disabled,omitempty"`
	// Features are its resources, resource templates and prompts (see
	// passthrough_features.go).
	Features *cachedFeatures `json:"features,omitempty"`

	// trust is the server's trust records, read beside the entry (not part of it),
	// against which its tools are verified as a listing's are.
	trust    map[string]tool.Tool
	trustSum string
}

// defaultStore is the store of a Hub whose options name none: DefaultStore,
// or, when there is none, a store.NewMemory() and a warning to log.
func defaultStore(log *slog.Logger) store.Store {
	d, err := DefaultStore()
	if err != nil {
		log.Warn("upstream: no cache folder; tool lists and trust records are kept for this run only", "error", err)
		return store.NewMemory()
	}
	return d
}

// DefaultStore returns the store a Hub (and toolsift.Open) keeps its
// tool lists, trust records, vectors and token costs in when the options
// name none: the folder os.UserCacheDir()/toolsift. It fails when there
// is no user cache folder, or it is refused (another user may write it).
func DefaultStore() (*store.Dir, error) {
	d, err := userCacheDir()
	if err != nil {
		return nil, err
	}
	return store.NewDir(filepath.Join(d, "toolsift"))
}

// storeCtx bounds one write of the Hub's store made outside any request
// (after s listed its tools): by the Hub's Timeout.
func (s *server) storeCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.h.opts.Timeout)
}

// readCatalogs sets the fingerprint of every server of servers that is
// not disabled and, when lazy (StartLazy mode), returns the cache entries
// st has of them, by server name.
func readCatalogs(ctx context.Context, st store.Store, servers []*server, lazy bool) map[string]*catalogEntry {
	dir := st
	if u, ok := st.(interface{ Unwrap() store.Store }); ok {
		dir = u.Unwrap() // an instrumented store (gateway.InstrumentStore) over a folder cleans it too
	}
	if d, ok := dir.(*store.Dir); ok {
		cachefile.RemoveStaleTemps(filepath.Join(d.Path(), "catalog"))
	}
	var load []*server
	for _, s := range servers {
		if s.cfg.Disabled {
			continue
		}
		s.lazy.fp = s.fingerprint()
		if s.lazy.fp == "" || !lazy {
			continue
		}
		load = append(load, s)
	}
	// Decoding an entry and checking its tools' hashes is CPU work (about
	// 9 ms a server on the 73-server catalog): one reader per core.
	entries := make([]*catalogEntry, len(load))
	next := make(chan int, len(load))
	for i := range load {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(load)) {
		wg.Go(func() {
			for i := range next {
				if e := load[i].loadCatalog(ctx); e != nil {
					e.trust, e.trustSum, _ = load[i].loadTrust(ctx)
					entries[i] = e
				}
			}
		})
	}
	wg.Wait()
	out := map[string]*catalogEntry{}
	for i, s := range load {
		if entries[i] != nil {
			out[s.name] = entries[i]
		}
	}
	return out
}

// check reports why e cannot stand for server's tools, if it cannot.
func (e *catalogEntry) check(server, fp string) error {
	switch {
	case e.Format != catalogFormat:
		return fmt.Errorf("format %d, want %d", e.Format, catalogFormat)
	case e.Server != server || e.Fingerprint != fp:
		return fmt.Errorf("entry of server %q with fingerprint %.12s, want %q and %.12s", e.Server, e.Fingerprint, server, fp)
	case e.Created.IsZero():
		return errors.New("no creation time")
	}
	seen := map[string]bool{}
	for _, t := range e.Tools {
		switch {
		case seen[t.Name] || t.Server != server || t.Name != QualifiedName(server, t.OriginalName):
			return fmt.Errorf("tool %q: wrong or repeated name", t.Name)
		case t.Hash != tool.ContentHash(t):
			return fmt.Errorf("tool %q: content does not match its hash", t.Name)
		}
		seen[t.Name] = true
	}
	for q, orig := range e.Disabled {
		if seen[q] || q != QualifiedName(server, orig) {
			return fmt.Errorf("disabled tool %q: wrong or repeated name", q)
		}
	}
	return nil
}

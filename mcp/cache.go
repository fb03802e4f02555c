package mcp

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/toolsift/toolsift/internal/cachefile"
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

// catalogEntry is one cache file: the tools one server listed, under the
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
	trust      map[string]tool.Tool
	trustStamp fileStamp
}

// setupCache checks the start mode and resolves the cache folder; without
// one the cache is off.
func (h *Hub) setupCache() error {
	if h.opts.Start != StartLazy && h.opts.Start != StartEager {
		return fmt.Errorf("%w: HubOptions.Start %d is not StartLazy or StartEager", ErrOptions, h.opts.Start)
	}
	if h.opts.IdleTimeout == 0 {
		h.opts.IdleTimeout = defaultIdleTimeout
	}
	dir, err := h.opts.CacheFolder()
	if err != nil {
		h.opts.Logger.Warn("mcp: no cache folder; tool lists are not cached", "error", err)
	}
	if dir != "" {
		if err := cachefile.CheckDir(dir); err != nil {
			h.opts.Logger.Warn("mcp: cache folder refused; tool lists are not cached", "error", err)
			dir = ""
		}
	}
	h.opts.CacheDir, h.opts.NoCache = dir, dir == ""
	return nil
}

// CacheFolder returns the folder a Hub with these options keeps its cache
// in: CacheDir, made absolute, or os.UserCacheDir()/toolsift when CacheDir
// is empty; "" when NoCache is set or there is no user cache folder (the
// error says why). toolsift.Open keeps what it derives from tool lists
// (vectors, token costs) in the same folder.
func (o HubOptions) CacheFolder() (string, error) {
	if o.NoCache {
		return "", nil
	}
	dir := o.CacheDir
	if dir == "" {
		d, err := userCacheDir()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(d, "toolsift")
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return dir, nil
}

func (h *Hub) catalogDir() string { return filepath.Join(h.opts.CacheDir, "catalog") }

// readCatalogs sets every server's fingerprint and, in StartLazy mode,
// returns the cache entries found, by server name.
func (h *Hub) readCatalogs() map[string]*catalogEntry {
	if h.opts.NoCache {
		return nil
	}
	cachefile.RemoveStaleTemps(h.catalogDir())
	var load []*server
	for _, name := range h.order {
		s := h.servers[name]
		if s.cfg.Disabled {
			continue
		}
		s.lazy.fp = s.fingerprint()
		if s.lazy.fp == "" || h.opts.Start != StartLazy {
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
				if e := load[i].loadCatalog(); e != nil {
					e.trust, e.trustStamp = load[i].loadTrust()
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

package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/cachefile"
	"github.com/toolsift/toolsift/tool"
)

// catalogFormat is the version of the cache entry layout; an entry of
// another version is ignored and rewritten.
const catalogFormat = 1

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

func (h *Hub) catalogFile(s *server) string {
	return filepath.Join(h.catalogDir(), serverPrefix(s.name)+"-"+s.lazy.fp+".json")
}

// readCatalogs sets every server's fingerprint and, in StartLazy mode,
// returns the cache entries found, by server name.
func (h *Hub) readCatalogs() map[string]*catalogEntry {
	if h.opts.NoCache {
		return nil
	}
	cachefile.RemoveStaleTemps(h.catalogDir())
	out := map[string]*catalogEntry{}
	for _, name := range h.order {
		s := h.servers[name]
		if s.cfg.Disabled {
			continue
		}
		s.lazy.fp = h.fingerprint(name, s.cfg)
		if s.lazy.fp == "" || h.opts.Start != StartLazy {
			continue
		}
		if e := h.loadCatalog(s); e != nil {
			out[name] = e
		}
	}
	return out
}

// fingerprint identifies how a server is launched: what decides which tools
// it lists. Environment and headers go in as hashes, and the whole as a
// hash, so the fingerprint holds no secret. A server with a Dial has none
// (it cannot be told apart from another run's).
func (h *Hub) fingerprint(name string, sc config.Server) string {
	key := ""
	if sc.Dial != nil {
		if dialKey == nil {
			return ""
		}
		key = dialKey(name)
	}
	version := sc.ProtocolVersion
	if version == "" {
		version = h.opts.ProtocolVersion
		if version == "" {
			version = "latest"
		}
	}
	launch := struct {
		Format          int
		Server          string
		Key             string
		Command         string
		Args            []string
		Cwd             string
		URL             string
		Type            string
		ProtocolVersion string
		AllowedTools    []string
		DisabledTools   []string
		Env, Headers    string
	}{
		Format: catalogFormat, Server: name, Key: key,
		Args: sc.Args, URL: sc.URL, Type: sc.Type, ProtocolVersion: version,
		AllowedTools: sc.AllowedTools, DisabledTools: sc.DisabledTools,
		Env: hashMap(sc.Env), Headers: hashMap(sc.Headers),
	}
	if sc.Command != "" {
		// As commandTransport resolves them.
		dir := h.dir
		if sc.Cwd != "" {
			dir = sc.Cwd
			if !filepath.IsAbs(dir) {
				dir = filepath.Join(h.dir, dir)
			}
		}
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
		launch.Cwd = dir
		launch.Command = sc.Command
		if strings.ContainsRune(sc.Command, filepath.Separator) && !filepath.IsAbs(sc.Command) {
			launch.Command = filepath.Join(dir, sc.Command)
		}
	}
	b, err := json.Marshal(launch)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// hashMap returns the hex SHA-256 of a map's sorted keys and values.
func hashMap(m map[string]string) string {
	if len(m) == 0 {
		return ""
	}
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(m)) {
		h.Write([]byte(k))
		h.Write([]byte{0})
		h.Write([]byte(m[k]))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// loadCatalog reads s's cache entry. A missing entry is a miss; an
// unreadable, corrupt or foreign one is a miss with a warning, and is
// rewritten when the server has listed its tools.
func (h *Hub) loadCatalog(s *server) *catalogEntry {
	file := h.catalogFile(s)
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err == nil {
		var e catalogEntry
		if err = json.Unmarshal(data, &e); err == nil {
			if err = e.check(s.name, s.lazy.fp); err == nil {
				return &e
			}
		}
	}
	h.opts.Logger.Warn("mcp: cache entry ignored; the server starts now and rewrites it", "server", s.name, "file", file, "error", err)
	return nil
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

// storeCatalog writes the tools s has just listed to its cache entry. A
// failure is logged: the cache only saves time.
func (h *Hub) storeCatalog(s *server) {
	if h.opts.NoCache || s.lazy.fp == "" {
		return
	}
	h.mu.Lock()
	if s.state != StateReady {
		h.mu.Unlock()
		return
	}
	s.lazy.fromCache = false
	e := catalogEntry{
		Format:          catalogFormat,
		Server:          s.name,
		Fingerprint:     s.lazy.fp,
		Created:         time.Now().UTC(),
		ProtocolVersion: s.version,
		Tools:           make([]tool.Tool, 0, len(s.tools)),
	}
	for _, q := range slices.Sorted(maps.Keys(s.tools)) {
		e.Tools = append(e.Tools, s.tools[q])
	}
	if len(s.disabled) > 0 {
		e.Disabled = maps.Clone(s.disabled)
	}
	if s.info != nil {
		e.ServerName, e.ServerVersion = s.info.Name, s.info.Version
	}
	h.mu.Unlock()

	data, err := json.MarshalIndent(e, "", "\t")
	if err == nil {
		err = cachefile.WriteAtomic(h.catalogFile(s), data)
	}
	if err != nil {
		h.opts.Logger.Warn("mcp: writing the cache entry failed", "server", s.name, "error", err)
		return
	}
	h.mu.Lock()
	s.lazy.cachedAt = e.Created
	h.mu.Unlock()
}

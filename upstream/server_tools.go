package upstream

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/tool"
)

// updateTools replaces a ready server's tools and returns what changed, for
// apply.
func (s *server) updateTools(list []*mcp.Tool) tool.Change {
	h := s.h
	tools := map[string]tool.Tool{}
	originals := map[string]string{}
	disabled := map[string]string{}
	var warnings []string
	seen := map[string]bool{}
	var changed, newly []ChangedTool

	h.mu.Lock()
	load := !s.trust.loaded
	h.mu.Unlock()
	if load {
		ctx, cancel := s.storeCtx()
		p, sum, _ := s.loadTrust(ctx)
		cancel()
		h.mu.Lock()
		if !s.trust.loaded {
			s.trust.tools, s.trust.loaded, s.trust.sum = p, true, sum
		}
		h.mu.Unlock()
	}
	// After the unlock below: log what newly changed, write new trust records.
	defer func() {
		for _, c := range newly {
			h.opts.Logger.Warn("upstream: tool changed since first seen; its readOnlyHint is ignored until accepted (Hub.Trust, toolbench trust)",
				"server", s.name, "tool", c.Name, "changed", strings.Join(c.What, ", "), "warning", changedWarning(c, s.name))
		}
		s.storeTrust()
	}()
	h.mu.Lock()
	defer h.mu.Unlock()
	if s.state != StateReady {
		return tool.Change{Server: s.name}
	}
	before := map[string]string{}
	for _, c := range s.changed {
		before[c.Name] = strings.Join(c.What, ", ")
	}
	s.trust.seen = map[string]tool.Tool{}
	if s.overTools > 0 {
		warnings = append(warnings, fmt.Sprintf("%d tools beyond the first %d not kept (HubOptions.MaxTools)", s.overTools, limit(h.opts.MaxTools, defaultMaxTools)))
	}
	for _, d := range s.deepTools {
		warnings = append(warnings, s.deep.warning(d))
	}
	maxDesc, maxSchema := limit(h.opts.MaxDescriptionBytes, defaultMaxDescriptionBytes), limit(h.opts.MaxSchemaBytes, defaultMaxSchemaBytes)
	for _, t := range list {
		if t == nil || seen[t.Name] {
			if t != nil {
				warnings = append(warnings, fmt.Sprintf("tool %q listed twice; kept the first", t.Name))
			}
			continue
		}
		seen[t.Name] = true
		if !utf8.ValidString(t.Name) || strings.ContainsRune(t.Name, utf8.RuneError) {
			// JSON decoding turned its invalid bytes into U+FFFD: a call
			// would send the server a name it never listed.
			warnings = append(warnings, fmt.Sprintf("tool %q: name is not valid UTF-8; dropped", t.Name))
			continue
		}
		q := QualifiedName(s.name, t.Name)
		if owner, ok := h.routes[q]; ok && owner != s {
			warnings = append(warnings, fmt.Sprintf("tool %q: qualified name %q is taken by server %s; dropped", t.Name, q, owner.name))
			continue
		}
		if !toolAllowed(s.cfg, t.Name) {
			disabled[q] = t.Name
			continue
		}
		if maxDesc > 0 && len(t.Description) > maxDesc {
			warnings = append(warnings, fmt.Sprintf("tool %q: description of %d bytes is over the limit of %d (HubOptions.MaxDescriptionBytes); dropped", t.Name, len(t.Description), maxDesc))
			continue
		}
		ct, warn, ok := convertTool(s.name, q, t)
		if warn != "" {
			warnings = append(warnings, warn)
		}
		if !ok {
			continue
		}
		if n := len(ct.InputSchema) + len(ct.OutputSchema); maxSchema > 0 && n > maxSchema {
			warnings = append(warnings, fmt.Sprintf("tool %q: schemas of %d bytes are over the limit of %d (HubOptions.MaxSchemaBytes); dropped", t.Name, n, maxSchema))
			continue
		}
		ct, what := s.verify(ct)
		if what != nil {
			c := ChangedTool{Name: q, What: what}
			changed = append(changed, c)
			warnings = append(warnings, changedWarning(c, s.name))
			if before[q] != strings.Join(what, ", ") {
				newly = append(newly, c)
			}
		}
		tools[q] = ct
		originals[q] = t.Name
	}

	var ch tool.Change
	ch.Server = s.name
	for _, q := range slices.Sorted(maps.Keys(tools)) {
		old, ok := s.tools[q]
		switch {
		case !ok:
			ch.Added = append(ch.Added, tools[q])
		case !tool.Same(old, tools[q]) || canonical(old.OutputSchema) != canonical(tools[q].OutputSchema):
			ch.Changed = append(ch.Changed, tools[q])
		}
	}
	for _, q := range slices.Sorted(maps.Keys(s.tools)) {
		if _, ok := tools[q]; !ok {
			ch.Removed = append(ch.Removed, q)
		}
	}
	for q, owner := range h.routes {
		if owner == s {
			delete(h.routes, q)
		}
	}
	for q := range tools {
		h.routes[q] = s
	}
	for q := range disabled {
		h.routes[q] = s
	}
	s.tools, s.originals, s.disabled, s.warnings = tools, originals, disabled, warnings
	slices.SortFunc(changed, func(a, b ChangedTool) int { return strings.Compare(a.Name, b.Name) })
	s.changed = changed
	return ch
}

// apply hands a change to the Hub's change sink (Connect's apply), one
// call at a time, and records its error in the server's status (and
// returns it). It must be
// called from s's supervisor, so that a server's changes arrive in order,
// and without h.mu held.
func (s *server) apply(ch tool.Change) error {
	h := s.h
	if h.apply == nil || ch.Empty() {
		return nil
	}
	h.changeMu.Lock()
	err := h.apply(h.life, ch)
	h.changeMu.Unlock()
	if err != nil {
		h.opts.Logger.Warn("upstream: applying a tool change failed", "server", s.name, "error", err)
	}
	h.mu.Lock()
	s.applyErr = err
	h.mu.Unlock()
	return err
}

// restFromCache makes s lazy with the tools of its cache entry e, unless e
// is nil or a cached name is taken by another server. h.mu is held.
func (s *server) restFromCache(e *catalogEntry) bool {
	h := s.h
	if e == nil {
		return false
	}
	if !s.trust.loaded && e.trust != nil {
		s.trust.tools, s.trust.loaded, s.trust.sum = e.trust, true, e.trustSum
	}
	tools := map[string]tool.Tool{}
	originals := map[string]string{}
	for _, t := range e.Tools {
		if owner, ok := h.routes[t.Name]; ok && owner != s {
			return false
		}
		// Verified against its trust record as a listing is, so that a tool
		// the server lists unchanged later is the same tool (no re-listing).
		// Without a record, or differing from it, its readOnlyHint is dropped.
		if rec, ok := s.trust.tools[t.OriginalName]; !ok || len(toolDiff(rec, t)) > 0 {
			t = unverified(t)
		}
		tools[t.Name] = t
		originals[t.Name] = t.OriginalName
	}
	for q := range e.Disabled {
		if owner, ok := h.routes[q]; ok && owner != s {
			return false
		}
	}
	s.tools, s.originals, s.disabled = tools, originals, maps.Clone(e.Disabled)
	if s.disabled == nil {
		s.disabled = map[string]string{}
	}
	for q := range s.tools {
		h.routes[q] = s
	}
	for q := range s.disabled {
		h.routes[q] = s
	}
	s.version = e.ProtocolVersion
	s.info = &mcp.Implementation{Name: e.ServerName, Version: e.ServerVersion}
	s.feat.restore(s.name, e.Features)
	s.lazy.cachedAt = e.Created
	s.lazy.fromCache = true
	s.state = StateLazy
	return true
}

// catalogKey is s's cache entry: named after its name prefix and
// fingerprint (in a store.Dir, the file catalog/PREFIX-FINGERPRINT.json
// toolsift has always written).
func (s *server) catalogKey() string {
	return "catalog/" + serverPrefix(s.name) + "-" + s.lazy.fp + ".json"
}

// fingerprint identifies how a server is launched: what decides which tools
// it lists. Environment and headers go in as hashes, and the whole as a
// hash, so the fingerprint holds no secret. A server with a Dial has none
// (it cannot be told apart from another run's).
func (s *server) fingerprint() string {
	h, name, sc := s.h, s.name, s.cfg
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
// rewritten when the server has listed its tools; so is one over
// maxCatalogBytes, or one the store refuses (store.Dir refuses a file that
// is not regular or that another user could have written).
func (s *server) loadCatalog(ctx context.Context) *catalogEntry {
	h := s.h
	key := s.catalogKey()
	data, err := store.GetBounded(ctx, h.opts.Store, key, maxCatalogBytes)
	if errors.Is(err, store.ErrNotFound) {
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
	h.opts.Logger.Warn("upstream: cache entry ignored; the server starts now and rewrites it", "server", s.name, "key", key, "error", err)
	return nil
}

// storeCatalog writes the tools s has just listed to its cache entry. A
// failure is logged: the cache only saves time.
func (s *server) storeCatalog() {
	h := s.h
	if s.lazy.fp == "" {
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
	e.Features = s.feat.cached()
	h.mu.Unlock()

	data, err := json.MarshalIndent(e, "", "\t")
	if err == nil {
		ctx, cancel := s.storeCtx()
		err = h.opts.Store.Put(ctx, s.catalogKey(), data)
		cancel()
	}
	if err != nil {
		h.opts.Logger.Warn("upstream: writing the cache entry failed", "server", s.name, "error", err)
		return
	}
	h.mu.Lock()
	s.lazy.cachedAt = e.Created
	h.mu.Unlock()
}

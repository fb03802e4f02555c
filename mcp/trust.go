package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/toolsift/toolsift/internal/cachefile"
	"github.com/toolsift/toolsift/tool"
)

// Rug pulls: a server that changes a tool after it was first seen (a
// description turned into an injection, readOnlyHint flipped to true, a
// parameter added), live or between runs. The Hub keeps what each tool of
// each server looked like when first seen or last accepted (its trust
// record), in the cache folder (trust/, read with cachefile.ReadFile:
// refused when another user could have written it; a record written under
// the folder's former name, pins/, is still read) or, without a cache, for
// the Hub's life. A tool that differs from its trust record is still
// served, but:
//
//   - a warning names it and what changed, in ServerStatus.Warnings and
//     ServerStatus.Changed and in the log (once per new difference);
//   - its readOnlyHint is dropped, so that an agent that asks approval for
//     tools that are not read-only asks for it again;
//   - Hub.Trust (toolbench trust) accepts the new version as its record.
//
// Tools from the cache entry of a lazy server are verified against the
// trust records as a listing is: one that matches its record keeps its
// readOnlyHint (so the server's first listing changes nothing), one without
// a record or differing from it loses it until the server lists it.

// trustFormat is the version of a trust file's layout.
const trustFormat = 1

// trustEntry is one trust file: a server's tools as first seen or accepted.
type trustEntry struct {
	Format int                  `json:"format"`
	Server string               `json:"server"`
	Tools  map[string]tool.Tool `json:"tools"` // by original name
}

// ChangedTool is a tool that differs from what the server first listed
// under its name (see Hub.Trust): Name is the qualified name, What the
// parts that changed ("description", "input schema", "annotations
// (readOnlyHint false → true)", ...).
type ChangedTool struct {
	Name string
	What []string
}

// trustSet is a server's trust records. Guarded by Hub.mu, except load
// and store.
type trustSet struct {
	loaded bool
	tools  map[string]tool.Tool // by original name: first seen or accepted
	seen   map[string]tool.Tool // the last listing, as listed, by original name
	dirty  bool
	stamp  fileStamp // of the trust file when last read or written
}

// fileStamp tells whether a file changed: its modification time and size
// (an atomic replace changes both or at least the time).
type fileStamp struct{ mod, size int64 }

func stampOf(file string) fileStamp {
	fi, err := os.Stat(file)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{fi.ModTime().UnixNano(), fi.Size()}
}

// trustDir is the cache folder's folder of trust files; legacyTrustDir
// its former name, whose files are still read (never written).
const (
	trustDir       = "trust"
	legacyTrustDir = "pins"
)

// trustFile is where s's trust records are kept; "" without a cache.
func (s *server) trustFile() string {
	return s.trustFileIn(trustDir)
}

func (s *server) trustFileIn(dir string) string {
	if s.h.opts.NoCache {
		return ""
	}
	sum := sha256.Sum256([]byte(s.name))
	return filepath.Join(s.h.opts.CacheDir, dir, serverPrefix(s.name)+"-"+hex.EncodeToString(sum[:8])+".json")
}

// loadTrust reads s's trust file (or, when there is none, the one under
// the folder's former name). It must not hold Hub.mu. A file that is
// refused or corrupt is logged: its tools are trusted anew as listed now.
// The stamp is the trust file's, so that a record written later is read.
func (s *server) loadTrust() (map[string]tool.Tool, fileStamp) {
	out := map[string]tool.Tool{}
	file := s.trustFile()
	if file == "" {
		return out, fileStamp{}
	}
	stamp := stampOf(file)
	data, err := cachefile.ReadFile(file, maxCatalogBytes)
	if errors.Is(err, fs.ErrNotExist) {
		file = s.trustFileIn(legacyTrustDir)
		data, err = cachefile.ReadFile(file, maxCatalogBytes)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return out, stamp
	}
	var e trustEntry
	if err == nil {
		if err = json.Unmarshal(data, &e); err == nil && (e.Format != trustFormat || e.Server != s.name) {
			err = fmt.Errorf("format %d of server %q, want %d of %q", e.Format, e.Server, trustFormat, s.name)
		}
	}
	if err != nil {
		s.h.opts.Logger.Warn("mcp: tool trust records ignored; the tools listed now are trusted anew", "server", s.name, "file", file, "error", err)
		return out, stamp
	}
	for orig, t := range e.Tools {
		if t.OriginalName == orig && t.Hash == tool.ContentHash(t) {
			out[orig] = t
		}
	}
	return out, stamp
}

// storeTrust writes s's trust records when they changed. It must not hold Hub.mu.
func (s *server) storeTrust() {
	h := s.h
	h.mu.Lock()
	if !s.trust.dirty {
		h.mu.Unlock()
		return
	}
	s.trust.dirty = false
	e := trustEntry{Format: trustFormat, Server: s.name, Tools: maps.Clone(s.trust.tools)}
	h.mu.Unlock()
	file := s.trustFile()
	if file == "" {
		return
	}
	data, err := json.MarshalIndent(e, "", "\t")
	if err == nil {
		err = cachefile.WriteAtomic(file, data)
	}
	if err == nil {
		// Our own write is no reason to reload (ReloadTrust).
		stamp := stampOf(file)
		h.mu.Lock()
		s.trust.stamp = stamp
		h.mu.Unlock()
	}
	if err != nil {
		h.opts.Logger.Warn("mcp: writing the tool trust records failed", "server", s.name, "error", err)
	}
}

// verify compares a tool the server listed with its trust record,
// recording it when it has none. It returns the tool to serve (without readOnlyHint when it
// changed) and what changed. h.mu is held.
func (s *server) verify(t tool.Tool) (tool.Tool, []string) {
	s.trust.seen[t.OriginalName] = t
	trusted, ok := s.trust.tools[t.OriginalName]
	if !ok {
		s.trust.tools[t.OriginalName] = t
		s.trust.dirty = true
		return t, nil
	}
	what := toolDiff(trusted, t)
	if len(what) == 0 {
		return t, nil
	}
	return unverified(t), what
}

// unverified returns t without its readOnlyHint.
func unverified(t tool.Tool) tool.Tool {
	if t.Annotations == nil || t.Annotations.ReadOnlyHint == nil {
		return t
	}
	a := *t.Annotations
	a.ReadOnlyHint = nil
	t.Annotations = &a
	if a == (tool.Annotations{}) {
		t.Annotations = nil
	}
	return t
}

// toolDiff names what differs between a tool's trust record and its
// listing.
func toolDiff(trusted, now tool.Tool) []string {
	var what []string
	if trusted.Description != now.Description {
		what = append(what, "description")
	}
	if trusted.Title != now.Title {
		what = append(what, "title")
	}
	if canonical(trusted.InputSchema) != canonical(now.InputSchema) {
		what = append(what, "input schema")
	}
	if canonical(trusted.OutputSchema) != canonical(now.OutputSchema) {
		what = append(what, "output schema")
	}
	if !reflect.DeepEqual(trusted.Annotations, now.Annotations) {
		var a, b tool.Annotations
		if trusted.Annotations != nil {
			a = *trusted.Annotations
		}
		if now.Annotations != nil {
			b = *now.Annotations
		}
		var hints []string
		hint := func(name string, x, y *bool) {
			if boolOr(x) != boolOr(y) || (x == nil) != (y == nil) {
				hints = append(hints, fmt.Sprintf("%s %s → %s", name, hintString(x), hintString(y)))
			}
		}
		hint("readOnlyHint", a.ReadOnlyHint, b.ReadOnlyHint)
		hint("destructiveHint", a.DestructiveHint, b.DestructiveHint)
		hint("idempotentHint", a.IdempotentHint, b.IdempotentHint)
		hint("openWorldHint", a.OpenWorldHint, b.OpenWorldHint)
		if a.Title != b.Title {
			hints = append(hints, "title")
		}
		what = append(what, "annotations ("+strings.Join(hints, ", ")+")")
	}
	return what
}

func boolOr(b *bool) bool { return b != nil && *b }

func hintString(b *bool) string {
	if b == nil {
		return "unset"
	}
	return fmt.Sprint(*b)
}

// changedWarning is the warning of a changed tool.
func changedWarning(c ChangedTool, server string) string {
	return fmt.Sprintf("tool %q changed since first seen (%s); its readOnlyHint is ignored until accepted: toolbench trust %s", c.Name, strings.Join(c.What, ", "), server)
}

// ReloadTrust reads again the trust files that changed on disk since this Hub
// read or wrote them, as toolbench trust in another process changes them,
// and lists the tools of those servers again, so that once it returns the
// accepted tools are served as accepted (their readOnlyHint back) and no
// longer reported as changed. A long-running Hub (toolsift serve) calls it
// before it answers a tools/list or a call: it costs one stat per server
// whose trust records are loaded. It returns the servers whose records
// were read again.
func (h *Hub) ReloadTrust(ctx context.Context) ([]string, error) {
	h.mu.Lock()
	var loaded []*server
	for _, name := range h.order {
		if s := h.servers[name]; s.trust.loaded && s.trustFile() != "" {
			loaded = append(loaded, s)
		}
	}
	h.mu.Unlock()
	var names []string
	var ready []*server
	for _, s := range loaded {
		stamp := stampOf(s.trustFile())
		h.mu.Lock()
		same := stamp == s.trust.stamp
		h.mu.Unlock()
		if same {
			continue
		}
		p, stamp := s.loadTrust()
		h.mu.Lock()
		s.trust.tools, s.trust.stamp = p, stamp
		if s.state == StateReady {
			ready = append(ready, s)
		}
		h.mu.Unlock()
		names = append(names, s.name)
	}
	if len(ready) == 0 {
		return names, nil
	}
	errs, err := h.relist(ctx, ready)
	if err != nil {
		return names, err
	}
	return names, h.redact.Err(errors.Join(errs...))
}

// ErrUnknownServer is wrapped by the error of Trust for a server the
// config does not name.
var ErrUnknownServer = errors.New("mcp: no such server")

// Trust accepts the current version of server's changed tools (the named
// ones, by qualified or original name, or all when none is named) as their
// trust records: they are no longer reported as changed and get their readOnlyHint
// back. A server that has not listed its tools in this Hub (lazy) is
// started first. Tools that the server no longer lists lose their
// records only when named. It returns the tools accepted.
func (h *Hub) Trust(ctx context.Context, server string, tools ...string) ([]string, error) {
	s, ok := h.servers[server]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownServer, server)
	}
	h.mu.Lock()
	listed := len(s.trust.seen) > 0
	h.mu.Unlock()
	if !listed {
		if err := h.Refresh(ctx); err != nil {
			return nil, err
		}
	}
	want := map[string]bool{}
	for _, t := range tools {
		want[t] = true
	}
	var accepted []string
	h.mu.Lock()
	for orig, t := range s.trust.seen {
		if len(want) > 0 && !want[orig] && !want[t.Name] {
			continue
		}
		if trusted, ok := s.trust.tools[orig]; !ok || len(toolDiff(trusted, t)) > 0 {
			s.trust.tools[orig] = t
			s.trust.dirty = true
			accepted = append(accepted, t.Name)
		}
	}
	for orig := range s.trust.tools {
		if _, listed := s.trust.seen[orig]; !listed && (want[orig] || want[QualifiedName(server, orig)]) {
			delete(s.trust.tools, orig)
			s.trust.dirty = true
		}
	}
	h.mu.Unlock()
	s.storeTrust()
	slices.Sort(accepted)
	if len(accepted) == 0 {
		return nil, nil
	}
	// List again: the accepted tools are served with their annotations.
	return accepted, h.Refresh(ctx)
}

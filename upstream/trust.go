package upstream

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/toolsift/toolsift/internal/cachefile"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/tool"
)

// Rug pulls: a server that changes a tool after it was first seen (a
// description turned into an injection, readOnlyHint flipped to true, a
// parameter added), live or between runs. The Hub keeps what each tool of
// each server looked like when first seen or last accepted (its trust
// record), in HubOptions.Store under trust/ (in a store.Dir a file,
// refused when another user could have written it; a record written under
// the former prefix, pins/, is still read; over a store.NewMemory() for
// the process's life). A process learns that another one accepted a tool
// through ReloadTrust. A tool that differs from its trust record is still
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

// changedOf is what changed in s's tool of qualified name (nil when
// nothing did). h.mu is held.
func (s *server) changedOf(name string) []string {
	for _, c := range s.changed {
		if c.Name == name {
			return c.What
		}
	}
	return nil
}

// trustSet is a server's trust records. Guarded by Hub.mu, except load
// and store.
type trustSet struct {
	loaded bool
	tools  map[string]tool.Tool // by original name: first seen or accepted
	seen   map[string]tool.Tool // the last listing, as listed, by original name
	dirty  bool
	sum    string // SHA-256 of the trust record as last read or written; "" for none
}

// The store's prefix of trust records; legacyTrustDir the former one, whose
// records are still read (never written). trustGenKey changes (a new
// random value) after each write of a trust record, so that a process can
// tell with one read that no record changed (ReloadTrust).
const (
	trustDir       = "trust"
	legacyTrustDir = "pins"
	trustGenKey    = "trust/generation"
)

// trustKey is the key of s's trust records (in a store.Dir, the file
// trust/PREFIX-HASH.json toolsift has always written).
func (s *server) trustKey() string {
	return s.trustKeyIn(trustDir)
}

func (s *server) trustKeyIn(dir string) string {
	sum := sha256.Sum256([]byte(s.name))
	return dir + "/" + serverPrefix(s.name) + "-" + hex.EncodeToString(sum[:8]) + ".json"
}

func sumOf(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// loadTrust reads s's trust records (or, when there are none, those under
// the former prefix). It must not hold Hub.mu. A record that is refused,
// over maxCatalogBytes or corrupt is logged: its tools are trusted anew as
// listed now. The sum is the record's, so that a record written later is
// read (ReloadTrust). err is the store's error when it could not be read
// (logged too): ReloadTrust then keeps the records it has.
func (s *server) loadTrust(ctx context.Context) (tools map[string]tool.Tool, sum string, err error) {
	st := s.h.opts.Store
	out := map[string]tool.Tool{}
	key := s.trustKey()
	data, err := store.GetBounded(ctx, st, key, maxCatalogBytes)
	if errors.Is(err, store.ErrNotFound) {
		key = s.trustKeyIn(legacyTrustDir)
		data, err = store.GetBounded(ctx, st, key, maxCatalogBytes)
	}
	if errors.Is(err, store.ErrNotFound) {
		return out, "", nil
	}
	// A record refused for its size or its file is trusted anew, as a
	// corrupt one is; one the store could not read is the caller's to keep.
	var readErr error
	if err != nil && !errors.Is(err, store.ErrTooLarge) && !errors.Is(err, cachefile.ErrUnsafe) {
		readErr = err
	}
	sum = sumOf(data)
	var e trustEntry
	if err == nil {
		if err = json.Unmarshal(data, &e); err == nil && (e.Format != trustFormat || e.Server != s.name) {
			err = fmt.Errorf("format %d of server %q, want %d of %q", e.Format, e.Server, trustFormat, s.name)
		}
	}
	if err != nil {
		s.h.opts.Logger.Warn("upstream: tool trust records ignored; the tools listed now are trusted anew", "server", s.name, "key", key, "error", err)
		return out, sum, readErr
	}
	for orig, t := range e.Tools {
		if t.OriginalName == orig && t.Hash == tool.ContentHash(t) {
			out[orig] = t
		}
	}
	return out, sum, nil
}

// storeTrust writes s's trust records when they changed, then a new trust
// generation. It must not hold Hub.mu.
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
	data, err := json.MarshalIndent(e, "", "\t")
	if err == nil {
		ctx, cancel := s.storeCtx()
		err = h.trust.write(ctx, s.trustKey(), data)
		cancel()
	}
	if err != nil {
		h.opts.Logger.Warn("upstream: writing the tool trust records failed", "server", s.name, "error", err)
		return
	}
	// Our own write is no reason to reload (ReloadTrust).
	h.mu.Lock()
	s.trust.sum = sumOf(data)
	h.mu.Unlock()
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

// trustGen is the trust generation of the Hub's store: it writes trust
// records, each with a new generation, and tells ReloadTrust whether
// another process may have written some since it last looked, at the cost
// of one small read (the generation) per call, or nothing at all when the
// store is a store.Watcher that reports changes.
type trustGen struct {
	st  store.Store
	log *slog.Logger

	watching atomic.Bool // a Watch of trust/ is listening: changed says it all
	changed  atomic.Bool // the Watch reported a change not yet looked at
	// firstGen: the first check once the Watch is listening also
	// compares the generation, for a change made before it listened.
	firstGen atomic.Bool

	mu      sync.Mutex
	gen     string // the trust generation when last looked at
	genRead bool
}

// write puts a trust record, then a new trust generation, under the
// store's lock of the generation. When no other process wrote one since
// this Hub last looked, it takes the new generation as seen: its own
// write is no reason for ReloadTrust to read every record again.
func (f *trustGen) write(ctx context.Context, key string, data []byte) error {
	unlock, err := f.st.Lock(ctx, trustGenKey)
	if err != nil {
		return err
	}
	defer unlock()
	prev, err := f.generation(ctx)
	if err != nil {
		return err
	}
	if err := f.st.Put(ctx, key, data); err != nil {
		return err
	}
	gen := rand.Text()
	if err := f.st.Put(ctx, trustGenKey, []byte(gen)); err != nil {
		return err
	}
	f.mu.Lock()
	if f.genRead && f.gen == prev {
		f.gen = gen
	}
	f.mu.Unlock()
	return nil
}

// watch notes the trust generation, so that records read from now on are
// at least that fresh, and, when the store is a store.Watcher, starts in
// wg a watch of the trust records that ends with life.
func (f *trustGen) watch(ctx, life context.Context, wg *sync.WaitGroup) {
	if gen, err := f.generation(ctx); err == nil {
		f.mu.Lock()
		f.gen, f.genRead = gen, true
		f.mu.Unlock()
	}
	if w, ok := f.st.(store.Watcher); ok {
		wg.Go(func() {
			// Until the watch listens, each check reads the generation,
			// as over a store that is no Watcher.
			err := w.Watch(life, trustDir+"/", func() {
				f.firstGen.Store(true)
				f.watching.Store(true)
			}, func(key string) {
				if key != trustGenKey {
					f.changed.Store(true)
				}
			})
			if life.Err() == nil {
				// Watching ended early: fall back to the generation, and
				// look once at every record.
				f.log.Warn("upstream: watching the trust records ended; reading the trust generation per request", "error", err)
				f.watching.Store(false)
				f.mu.Lock()
				f.genRead = false
				f.mu.Unlock()
			}
		})
	}
}

// recheck makes the next mayHaveChanged report a change.
func (f *trustGen) recheck() {
	f.changed.Store(true)
	f.mu.Lock()
	f.genRead = false
	f.mu.Unlock()
}

// generation reads the trust generation; "" when there is none.
func (f *trustGen) generation(ctx context.Context) (string, error) {
	gen, err := f.st.Get(ctx, trustGenKey)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	return string(gen), err
}

// mayHaveChanged reports whether another process may have written trust
// records since the last call.
func (f *trustGen) mayHaveChanged(ctx context.Context) bool {
	if f.watching.Load() && !f.firstGen.Swap(false) {
		return f.changed.Swap(false)
	}
	watched := f.changed.Swap(false)
	gen, err := f.generation(ctx)
	if err != nil {
		return true // unknown: look at the records themselves
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	same := f.genRead && gen == f.gen
	f.gen, f.genRead = gen, true
	return !same || watched
}

// ReloadTrust reads again the trust records that changed in the store since
// this Hub read or wrote them, as toolbench trust in another process
// changes them, and lists the tools of those servers again, so that once
// it returns the accepted tools are served as accepted (their readOnlyHint
// back) and no longer reported as changed. A long-running Hub (toolsift
// serve) calls it before it answers a tools/list or a call: when no trust
// record was written since the last call it costs one read of a small
// value (the trust generation, which every write of a record changes), or
// nothing when the store is a store.Watcher; otherwise every loaded record
// is read and compared with what the Hub has. It returns the servers whose
// records were read again.
func (h *Hub) ReloadTrust(ctx context.Context) ([]string, error) {
	if !h.trust.mayHaveChanged(ctx) {
		return nil, nil
	}
	h.mu.Lock()
	var loaded []*server
	for _, s := range h.order {
		if s.trust.loaded {
			loaded = append(loaded, s)
		}
	}
	h.mu.Unlock()
	var names []string
	var ready []*server
	for _, s := range loaded {
		p, sum, err := s.loadTrust(ctx)
		if err != nil {
			// Not read (the store failed, ctx ended): keep the records
			// this Hub has, and look again at the next call.
			h.trust.recheck()
			continue
		}
		h.mu.Lock()
		same := sum == s.trust.sum
		if !same {
			s.trust.tools, s.trust.sum = p, sum
			if s.state == StateReady {
				ready = append(ready, s)
			}
		}
		h.mu.Unlock()
		if !same {
			names = append(names, s.name)
		}
	}
	if len(ready) == 0 {
		return names, nil
	}
	errs, err := h.relist(ctx, ready, false)
	if err != nil {
		return names, err
	}
	return names, h.redact.Err(errors.Join(errs...))
}

// ErrUnknownServer is wrapped by the error of Trust for a server the
// config does not name.
var ErrUnknownServer = errors.New("upstream: no such server")

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

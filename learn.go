package toolsift

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/toolsift/toolsift/internal/usagekey"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/usage"
)

// usageWriteDelay is how long after a call is recorded the memory is
// written to the store: the calls of a burst are written once.
const usageWriteDelay = time.Second

// learner is the Toolset's usage memory (Options.Usage): the memory the
// Think step ranks with and, when kept, its store: each scope is read at
// Open, written within usageWriteDelay of a call and at Close, and read
// again when another process writes it (store.Watcher).
type learner struct {
	mem *usage.Memory
	st  store.Store // nil: not kept (Options.Thinker's memory)
	log *slog.Logger

	// mu orders the changes of mem made here: a record, and a scope read
	// from the store with the calls not yet written recorded again.
	mu      sync.Mutex
	pending map[string][]usage.Event // by scope, recorded since the last write
	closed  bool
	kick    chan struct{} // a call was recorded: write within usageWriteDelay

	life    context.Context
	stop    context.CancelFunc
	wg      sync.WaitGroup
	changed chan struct{} // a key under usagekey.Prefix was written elsewhere
	keysMu  sync.Mutex
	keys    map[string]bool // those keys
}

func newLearner(mem *usage.Memory, st store.Store, log *slog.Logger) *learner {
	l := &learner{mem: mem, st: st, log: log, pending: map[string][]usage.Event{}, changed: make(chan struct{}, 1), kick: make(chan struct{}, 1), keys: map[string]bool{}}
	l.life, l.stop = context.WithCancel(context.Background())
	return l
}

// start reads every scope of the store and, over a store.Watcher, follows
// the writes of other processes.
func (l *learner) start() {
	if l.st == nil {
		return
	}
	l.wg.Go(l.writer)
	if w, ok := l.st.(store.Watcher); ok {
		l.wg.Go(func() {
			// What another process wrote before the watch listened is
			// read again once it listens (a key "" asks for every key).
			err := w.Watch(l.life, usagekey.Prefix, func() { l.changedKey("") }, l.changedKey)
			if l.life.Err() == nil {
				l.log.Warn("toolsift: watching the usage memory ended; other replicas' calls are read at the next write", "error", err)
			}
		})
		l.wg.Go(l.follow)
	}
	ctx, cancel := context.WithTimeout(l.life, flushTimeout)
	defer cancel()
	l.readAll(ctx)
}

// changedKey notes that another process wrote key ("": every key, to be
// listed) for follow.
func (l *learner) changedKey(key string) {
	l.keysMu.Lock()
	l.keys[key] = true
	l.keysMu.Unlock()
	select {
	case l.changed <- struct{}{}:
	default:
	}
}

// readAll reads every scope the store holds.
func (l *learner) readAll(ctx context.Context) {
	keys, err := l.st.List(ctx, usagekey.Prefix)
	if err != nil {
		l.log.Warn("toolsift: usage memory: list the store", "prefix", usagekey.Prefix, "error", err)
		return
	}
	for _, key := range keys {
		l.read(ctx, key)
	}
}

// follow reads again each scope another process wrote.
func (l *learner) follow() {
	for {
		select {
		case <-l.life.Done():
			return
		case <-l.changed:
		}
		l.keysMu.Lock()
		keys := l.keys
		l.keys = map[string]bool{}
		l.keysMu.Unlock()
		for _, key := range slices.Sorted(maps.Keys(keys)) {
			ctx, cancel := context.WithTimeout(l.life, flushTimeout)
			if key == "" {
				l.readAll(ctx)
			} else {
				l.read(ctx, key)
			}
			cancel()
		}
	}
}

// read takes the scope kept under key as the truth, with the calls not yet
// written recorded again. A key that is no scope's, or whose value is not
// a scope, is logged naming it and changes nothing.
func (l *learner) read(ctx context.Context, key string) {
	scope, ok := usagekey.Scope(key)
	if !ok {
		l.log.Warn("toolsift: usage memory: a key that names no scope, ignored", "key", key)
		return
	}
	data, err := l.st.Get(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		data, err = nil, nil // forgotten: nothing but the calls not yet written
	}
	if err != nil {
		l.log.Warn("toolsift: usage memory: read", "key", key, "error", err)
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.replace(key, scope, data)
}

// replace sets scope to data and records again its calls not yet written.
// l.mu is held.
func (l *learner) replace(key, scope string, data []byte) bool {
	if err := l.mem.Replace(scope, data); err != nil {
		l.log.Error("toolsift: usage memory: the store's value is not a usage scope; this process keeps what it holds and writes it there at its next call", "key", key, "error", err)
		return false
	}
	for _, ev := range l.pending[scope] {
		_ = l.mem.Record(ev) // recorded once already: valid
	}
	return true
}

// record keeps ev and has it written soon.
func (l *learner) record(ev usage.Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.mem.Record(ev); err != nil {
		return err
	}
	if l.st == nil || l.closed {
		return nil
	}
	p := append(l.pending[ev.Scope], ev)
	if max := l.mem.Options().MaxCalls; len(p) > max {
		p = p[len(p)-max:] // a store that has failed for long: the latest calls
	}
	l.pending[ev.Scope] = p
	select {
	case l.kick <- struct{}{}:
	default:
	}
	return nil
}

// writer writes the calls recorded, usageWriteDelay after the first of
// each burst, until the learner closes.
func (l *learner) writer() {
	for {
		select {
		case <-l.life.Done():
			return
		case <-l.kick:
		}
		select {
		case <-l.life.Done():
			return
		case <-time.After(usageWriteDelay):
		}
		l.flush()
	}
}

// flush writes every scope with calls not yet written.
func (l *learner) flush() {
	l.mu.Lock()
	scopes := slices.Sorted(maps.Keys(l.pending))
	l.mu.Unlock()
	for _, scope := range scopes {
		ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
		if err := l.write(ctx, scope); err != nil {
			l.log.Warn("toolsift: usage memory: write", "key", usagekey.Key(scope), "error", err)
		}
		cancel()
	}
}

// write writes scope: under the store's lock of its key, what the store
// holds (other processes' calls, and what was forgotten there) with this
// process's calls not yet written. On failure those calls stay to write.
func (l *learner) write(ctx context.Context, scope string) error {
	key := usagekey.Key(scope)
	if err := store.CheckKey(key); err != nil {
		l.mu.Lock()
		delete(l.pending, scope)
		l.mu.Unlock()
		return fmt.Errorf("scope %q cannot be kept: %w", scope, err)
	}
	unlock, err := l.st.Lock(ctx, key)
	if err != nil {
		return err
	}
	defer unlock()
	data, err := l.st.Get(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		data, err = nil, nil
	}
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.replace(key, scope, data)
	evs := l.pending[scope]
	delete(l.pending, scope)
	value := l.mem.Marshal(scope)
	l.mu.Unlock()
	if err := l.st.Put(ctx, key, value); err != nil {
		l.mu.Lock()
		l.pending[scope] = append(evs, l.pending[scope]...)
		l.mu.Unlock()
		return err
	}
	return nil
}

// close writes what is not written yet and stops following the store.
func (l *learner) close() {
	l.stop()
	l.wg.Wait()
	l.mu.Lock()
	l.closed = true // from now on a call is kept in memory only
	l.mu.Unlock()
	if l.st != nil {
		l.flush()
	}
}

// usageTexts are the texts a call is kept under for query q: its task
// (the user's request: what a later run's first step ranks under) and its
// thought, when it has one (what a later step ranks under), each once.
func usageTexts(q retrieval.Query) []string {
	var out []string
	for _, t := range []string{q.Task, q.Thought} {
		if t = strings.TrimSpace(t); t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// Record tells the Toolset's usage memory (Options.Usage) that the step
// whose query was q (think.Request.Query; Selection.Query for Select)
// led to a successful call of the tool named name, by the caller of ctx
// (usage.WithCaller: its scope keeps the call, for its identity; the
// scope "" and identity "" without one). The call is kept under q's Task
// (the user's request) and, when q has one, its Thought, so that a later
// request like either, in other words, ranks that tool higher for that
// caller (and, once enough identities made such calls, for the rest of
// the scope). Tell it only of calls that succeeded, of tools the step
// offered or search_tools found: a failed, refused or unoffered call
// teaches nothing. With the memory off (Options.NoUsage) Record does
// nothing. A tool the catalog does not hold or a query with neither task
// nor thought is an error wrapping retrieval.ErrRecord.
func (ts *Toolset) Record(ctx context.Context, q retrieval.Query, name string) error {
	if ts.learn == nil {
		return nil
	}
	texts := usageTexts(q)
	if len(texts) == 0 {
		return fmt.Errorf("toolsift: record %q: %w: a query with neither task nor thought", name, retrieval.ErrRecord)
	}
	r, now := ts.th.Load().Retriever(), time.Now()
	for _, text := range texts {
		ev, err := r.UsageEvent(ctx, text, name, now)
		if err != nil {
			return fmt.Errorf("toolsift: record: %w", err)
		}
		if err := ts.learn.record(ev); err != nil {
			return fmt.Errorf("toolsift: record: %w: %w", retrieval.ErrRecord, err)
		}
	}
	return nil
}

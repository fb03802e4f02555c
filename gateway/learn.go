package gateway

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/toolsift/toolsift/gateway/authn"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/usage"
)

// What the gateway learns (the Toolset's usage memory, toolsift.Options
// Usage): a search_tools query followed by the same caller's successful
// call of a tool that search returned, on either wire, is a call of that
// tool after that request. A call by name that no search of the caller's
// returned (the tool listed, pinned, or known to the client) has no
// request text and teaches nothing; nor does a call refused (out of the
// caller's scope, quarantined, disabled, its result held back) or failed.
// The caller is the request's authn.Identity: its user the identity, and
// the scope as Options.Search.LearnScope says (by default its first team; one
// scope, "", for a caller with no team and for anonymous callers, who are
// one caller).

// Bounds of the searches remembered.
const (
	// learnCallers is how many callers' latest searches are kept; past it
	// the caller who searched least recently is forgotten.
	learnCallers = 4096
	// learnSearches is how many of one caller's latest searches a call
	// is matched against (a search, another, then the call of a tool the
	// first one found).
	learnSearches = 4
	// learnTTL is how long after a search a call of a tool it returned
	// still counts as following it.
	learnTTL = 15 * time.Minute
)

// recorder is a Toolset that learns (toolsift.Toolset.Record).
type recorder interface {
	Record(ctx context.Context, q retrieval.Query, name string) error
}

// usageCaller returns ctx carrying the usage caller of its Identity
// (usage.WithCaller): the scope whose memory a ranking under ctx consults
// and a call is kept in.
func (p *proxy) usageCaller(ctx context.Context) context.Context {
	return usage.WithCaller(ctx, p.callerOf(ctx))
}

// callerOf is the usage caller of ctx's Identity, in the scope
// Options.Search.LearnScope gives it.
func (p *proxy) callerOf(ctx context.Context) usage.Caller {
	id, _ := authn.IdentityFrom(ctx)
	c := usage.Caller{Identity: id.User}
	switch p.opts.Search.LearnScope {
	case LearnByUser:
		if id.User != "" {
			c.Scope = "user:" + id.User
		}
	case LearnGlobal:
	default:
		if len(id.Teams) > 0 {
			c.Scope = id.Teams[0]
		}
	}
	return c
}

// searchMemo is the latest searches of each caller (learnSearches, for
// learnCallers callers). The zero value is ready.
type searchMemo struct {
	mu      sync.Mutex
	callers map[usage.Caller]*callerSearches
	tick    uint64 // orders the callers by their latest search
}

type callerSearches struct {
	last     uint64
	searches []pastSearch // oldest first
}

type pastSearch struct {
	query string
	found []string // what it returned and was not called since
	at    time.Time
}

// searched remembers that the caller of ctx searched query and that the
// answer returned tools.
func (p *proxy) searched(ctx context.Context, query string, tools []tool.Tool) {
	if _, ok := p.ts.(recorder); !ok || len(tools) == 0 {
		return
	}
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	p.memo.searched(p.callerOf(ctx), query, names, time.Now())
}

// learnCall tells the Toolset that the caller of ctx called the tool
// named name successfully, after the latest of its searches that returned
// it; nothing when none did.
func (p *proxy) learnCall(ctx context.Context, name string) {
	rec, ok := p.ts.(recorder)
	if !ok {
		return
	}
	c := p.callerOf(ctx)
	query, ok := p.memo.called(c, name, time.Now())
	if !ok {
		return
	}
	if err := rec.Record(usage.WithCaller(ctx, c), retrieval.Query{Task: query}, name); err != nil {
		level := slog.LevelWarn
		if errors.Is(err, retrieval.ErrRecord) {
			level = slog.LevelDebug // a tool the catalog does not hold (yet): a per-user one
		}
		p.logger(ctx, nil).Log(ctx, level, "learn", "tool", name, "error", err)
	}
}

func (m *searchMemo) searched(c usage.Caller, query string, names []string, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.callers == nil {
		m.callers = map[usage.Caller]*callerSearches{}
	}
	cs := m.callers[c]
	if cs == nil {
		if len(m.callers) >= learnCallers {
			m.evict()
		}
		cs = &callerSearches{}
		m.callers[c] = cs
	}
	m.tick++
	cs.last = m.tick
	cs.searches = append(cs.searches, pastSearch{query: query, found: names, at: now})
	if len(cs.searches) > learnSearches {
		cs.searches = slices.Delete(cs.searches, 0, len(cs.searches)-learnSearches)
	}
}

// evict forgets the caller who searched least recently. m.mu is held.
func (m *searchMemo) evict() {
	var oldest usage.Caller
	var at uint64
	first := true
	for c, cs := range m.callers {
		if first || cs.last < at {
			oldest, at, first = c, cs.last, false
		}
	}
	delete(m.callers, oldest)
}

// called returns the query of c's latest search, within learnTTL, that
// returned name, and takes name from what it returned: one search teaches
// a tool once.
func (m *searchMemo) called(c usage.Caller, name string, now time.Time) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cs := m.callers[c]
	if cs == nil {
		return "", false
	}
	for i := len(cs.searches) - 1; i >= 0; i-- {
		s := &cs.searches[i]
		if now.Sub(s.at) > learnTTL {
			break
		}
		if j := slices.Index(s.found, name); j >= 0 {
			s.found = slices.Delete(s.found, j, j+1)
			return s.query, true
		}
	}
	return "", false
}

package usage

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
)

// ErrOptions reports Options that New cannot use.
var ErrOptions = errors.New("usage: invalid options")

// ErrEvent reports an Event that Record cannot keep: no tool, or a request
// with neither a vector nor a term.
var ErrEvent = errors.New("usage: invalid event")

// The defaults of Options, stated in its fields' docs.
const (
	defaultMaxCalls = 4096
	defaultMaxBytes = 4 << 20
	defaultHalfLife = 30 * 24 * time.Hour
	defaultSupport  = 2
)

// Options configure a Memory. The zero value (or nil) gives the defaults.
type Options struct {
	// MaxCalls bounds the calls one scope keeps (a request and the tool it
	// led to, for one identity; the same call made again counts once, with
	// its count). When a call would pass it, or MaxBytes, the weakest calls
	// go first: the most decayed, then the least repeated, then the
	// oldest. Default 4,096.
	MaxCalls int
	// MaxBytes bounds what one scope's requests (vectors, terms, texts) and
	// calls take in memory, about as Marshal writes them. Default
	// 4 MiB.
	MaxBytes int
	// HalfLife is the age at which a call counts half as much as a call
	// made now, now being the latest call the scope holds (so that the
	// same events give the same votes whenever they are asked: a scope
	// nobody uses does not forget). A tool renamed or removed gets no
	// votes at all, and its calls, no longer renewed, fade and are the
	// first to go. Default 30 days.
	HalfLife time.Duration
	// KeepText keeps each request's text (Request.Text) beside its vector
	// and hashed terms. Off by default: a request is kept as numbers only,
	// and Entries reports no text.
	KeepText bool
	// Support is how many distinct identities (the caller's own included)
	// must have led a tool to be voted for before the votes of an identity
	// count for a caller other than itself: one identity cannot move
	// another's ranking on its own. An identity's own calls always count
	// for it. Default 2; 1 lets any identity's calls count for
	// every other.
	Support int

	// tune are the rules' constants, set by the benchmarks that measure
	// others (SetTuning).
	tune tuning
}

// Caller is who asks or calls: the scope whose memory a ranking consults
// and a call is kept in (a team, a user, or one scope for everything), and
// the identity within it.
type Caller struct {
	Scope    string
	Identity string
}

type callerKey struct{}

// WithCaller returns ctx carrying c, the caller whose scope a ranking
// under ctx consults and whose identity its votes are counted for.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the Caller of ctx (WithCaller); the zero Caller, the
// scope "" and the identity "", when it has none: a program with one user.
func CallerFrom(ctx context.Context) Caller {
	c, _ := ctx.Value(callerKey{}).(Caller)
	return c
}

// Request is a request as a Memory keeps it and compares it: the sentence
// encoder's vector of its text and its hashed index terms, and its text
// only when Options.KeepText.
type Request struct {
	// Vector is the sentence encoder's vector of the request (a unit
	// vector; nil without an encoder). Requests whose vectors differ in
	// length are compared by their terms only.
	Vector []float32
	// Terms are the request's words, hashed (HashTerms).
	Terms []uint32
	// Text is the request; Record keeps it only with Options.KeepText.
	Text string
}

// HashTerms returns the hashed form of words, sorted, each once: what a
// Request keeps of its words (retrieval gives it the request's index
// terms that the catalog's tools have, so that names and ids are neither
// kept nor compared).
func HashTerms(words []string) []uint32 {
	out := make([]uint32, 0, len(words))
	for _, w := range words {
		h := fnv.New32a()
		h.Write([]byte(w))
		out = append(out, h.Sum32())
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Event is one successful call that followed a request.
type Event struct {
	// Caller made the request and the call: its Scope keeps the event.
	Caller
	// Request is what was asked.
	Request Request
	// Tool names the tool called; Hash is its content hash
	// (tool.Tool.Hash) when it was called: the call votes only for that
	// version of the tool.
	Tool, Hash string
	// Time is when the call was made.
	Time time.Time
}

// Memory keeps, per scope, which tools requests led to, bounded and
// decaying, and answers what a new request's neighbours vote for
// (Votes). The same events, recorded or merged in any order, give the same
// Memory. It is safe for concurrent use.
type Memory struct {
	opts Options

	mu     sync.RWMutex
	scopes map[string]*scope
}

// New returns an empty Memory.
func New(opts *Options) (*Memory, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	switch {
	case o.MaxCalls < 0:
		return nil, fmt.Errorf("%w: MaxCalls = %d", ErrOptions, o.MaxCalls)
	case o.MaxBytes < 0:
		return nil, fmt.Errorf("%w: MaxBytes = %d", ErrOptions, o.MaxBytes)
	case o.HalfLife < 0:
		return nil, fmt.Errorf("%w: HalfLife = %v", ErrOptions, o.HalfLife)
	case o.Support < 0:
		return nil, fmt.Errorf("%w: Support = %d", ErrOptions, o.Support)
	}
	if o.MaxCalls == 0 {
		o.MaxCalls = defaultMaxCalls
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = defaultMaxBytes
	}
	if o.HalfLife == 0 {
		o.HalfLife = defaultHalfLife
	}
	if o.Support == 0 {
		o.Support = defaultSupport
	}
	if o.tune == (tuning{}) {
		o.tune = defaultTuning
	}
	if err := o.tune.check(); err != nil {
		return nil, err
	}
	return &Memory{opts: o, scopes: map[string]*scope{}}, nil
}

// Options returns the options in force, defaults filled in.
func (m *Memory) Options() Options { return m.opts }

// Record keeps ev in its scope: a call of the same tool after the same
// request by the same identity counts once more (its count), and then the
// scope is bounded again (Options.MaxCalls, MaxBytes). An event with no
// tool, or whose request has neither a vector nor a term, is an error
// wrapping ErrEvent.
func (m *Memory) Record(ev Event) error {
	if strings.TrimSpace(ev.Tool) == "" {
		return fmt.Errorf("%w: no tool", ErrEvent)
	}
	if len(ev.Request.Vector) == 0 && len(ev.Request.Terms) == 0 {
		return fmt.Errorf("%w: tool %q: the request has neither a vector nor a term", ErrEvent, ev.Tool)
	}
	for _, x := range ev.Request.Vector {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("%w: tool %q: the request's vector is not finite", ErrEvent, ev.Tool)
		}
	}
	req := newRequest(ev.Request, m.opts.KeepText)
	c := call{identity: ev.Identity, tool: ev.Tool, hash: ev.Hash, count: 1, first: ev.Time.UnixNano(), last: ev.Time.UnixNano()}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.scope(ev.Scope)
	s.add(req, c)
	s.bound(m.opts)
	return nil
}

// scope returns the scope named name, made when missing. m.mu is held.
func (m *Memory) scope(name string) *scope {
	s := m.scopes[name]
	if s == nil {
		s = newScope()
		m.scopes[name] = s
	}
	return s
}

// Calls returns how many calls scope holds (each call counted once,
// whatever its count): 0 for a scope that holds nothing.
func (m *Memory) Calls(scope string) int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if s := m.scopes[scope]; s != nil {
		return s.calls
	}
	return 0
}

// Scopes returns the names of the scopes that hold calls, sorted.
func (m *Memory) Scopes() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]string, 0, len(m.scopes))
	for name, s := range m.scopes {
		if s.calls > 0 {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

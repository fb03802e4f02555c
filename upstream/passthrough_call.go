package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CallProgress is one notifications/progress a server sent for a request
// made with a ctx from WithProgress.
type CallProgress struct {
	// Progress grows with every notice; Total is its end, 0 when the
	// server does not know it.
	Progress, Total float64
	// Message, if any, says what is going on.
	Message string
}

type progressKey struct{}

// WithProgress returns a ctx that asks the server of a Hub.Call,
// Passthrough.ReadResource or Passthrough.GetPrompt made with it for
// progress notices: the request carries a progress token of the Hub's
// own, and fn receives every notifications/progress the server sends for
// that token. Calls of fn are one at a time, in the order the notices
// arrived, and all of them happen before the request returns: every
// notice the server sent before its result reaches fn first (the SDK
// hands a result to its caller at once but notifications to a goroutine
// of their own, so the request waits for the notices it saw go by; see
// progressSink), and none after, since progress after the result means
// nothing to the caller, nor to a proxy's client. fn must not block for
// long: the server's other messages wait for it.
//
// A ctx, not a Call parameter, so that it passes through code between the
// caller and the Hub (toolsift.Toolset.Call) unchanged.
func WithProgress(ctx context.Context, fn func(CallProgress)) context.Context {
	if fn == nil {
		return ctx
	}
	return context.WithValue(ctx, progressKey{}, fn)
}

// inflight is what a Hub keeps of the requests in flight to its servers:
// their progress tokens, which calls a server→client request or a log
// message may belong to, and the log messages noted on the wire. Its own
// lock, never held while calling out.
type inflight struct {
	log *slog.Logger // the Hub's

	mu       sync.Mutex
	next     uint64
	progress map[string]*progressSink      // progress token → its request's callback
	byServer map[*server]map[*request]bool // requests in flight, by server
	logs     map[*server][]loggedFor       // log messages noted, not yet handed over
}

// progressSink delivers one request's notices: its progress (fn) and the
// server's log messages while it is the only request in flight to that
// server (log, see WithLog); mu keeps the calls one at a time and none
// after done.
//
// seen counts the request's notices as they go by on the connection,
// before the SDK decodes them (noteMessage, called by the transports'
// reading in the order the server wrote), handed counts those the SDK has
// handed over since. A server writes a request's notices before its
// result on the same stream, so when the result reaches the Hub every
// notice before it is in seen, and the request waits (flush) until handed
// catches up before it returns.
type progressSink struct {
	seen atomic.Int64

	mu      sync.Mutex
	fn      func(CallProgress)
	log     func(LogMessage)
	done    bool
	handed  int64
	changed chan struct{} // closed and replaced when handed grows
}

// hand counts one notice handed over. k.mu is held.
func (k *progressSink) hand() {
	k.handed++
	close(k.changed)
	k.changed = make(chan struct{})
}

// progressFlushWait bounds how long a request that has its result waits
// for progress notices it saw go by but the SDK has not handed over (one
// the SDK drops, as malformed, never comes).
const progressFlushWait = 2 * time.Second

// flush waits until every notice seen before now has been handed to fn,
// for at most progressFlushWait or until ctx ends.
func (k *progressSink) flush(ctx context.Context) {
	var timeout <-chan time.Time
	for {
		k.mu.Lock()
		if k.handed >= k.seen.Load() {
			k.mu.Unlock()
			return
		}
		changed := k.changed
		k.mu.Unlock()
		if timeout == nil {
			t := time.NewTimer(progressFlushWait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-changed:
		case <-timeout:
			return
		case <-ctx.Done():
			return
		}
	}
}

// request is one request of the Hub to a server, in flight. ctx is the
// caller's: server→client requests that belong to it are handled with
// its values (see ClientRequests).
type request struct {
	server *server
	name   string // the qualified tool, resource URI or prompt it is for
	ctx    context.Context
	sink   *progressSink // nil when the caller asked for neither progress nor logs
}

type requestKey struct{}

// progressParams is what the SDK's request params have for a progress
// token.
type progressParams interface{ SetProgressToken(any) }

// begin registers a request of the Hub to s for name: its progress token,
// when ctx asks for progress, goes into params, and ctx is returned marked
// with the request (the SDK hands that ctx to the handlers of
// server→client requests it makes for a multi round-trip result). end
// unregisters it; after end, no progress notice reaches the caller.
func (p *inflight) begin(ctx context.Context, s *server, name string, params progressParams) (context.Context, func()) {
	r := &request{server: s, name: name, ctx: ctx}
	var sink *progressSink
	var token string
	fn, _ := ctx.Value(progressKey{}).(func(CallProgress))
	logFn, _ := ctx.Value(logKey{}).(func(LogMessage))
	if fn != nil || logFn != nil {
		sink = &progressSink{fn: fn, log: logFn, changed: make(chan struct{})}
		r.sink = sink
	}

	p.mu.Lock()
	p.next++
	if fn != nil {
		token = "toolsift-" + strconv.FormatUint(p.next, 10)
		if p.progress == nil {
			p.progress = map[string]*progressSink{}
		}
		p.progress[token] = sink
	}
	if p.byServer == nil {
		p.byServer = map[*server]map[*request]bool{}
	}
	if p.byServer[s] == nil {
		p.byServer[s] = map[*request]bool{}
	}
	p.byServer[s][r] = true
	p.mu.Unlock()

	if token != "" {
		params.SetProgressToken(token)
	}
	return context.WithValue(ctx, requestKey{}, r), func() {
		if sink != nil {
			sink.flush(ctx)
		}
		p.mu.Lock()
		delete(p.byServer[s], r)
		if len(p.byServer[s]) == 0 {
			delete(p.byServer, s)
		}
		if token != "" {
			delete(p.progress, token)
		}
		p.mu.Unlock()
		if sink != nil {
			sink.mu.Lock()
			sink.done = true
			sink.mu.Unlock()
		}
	}
}

// onProgress hands a progress notice to the request whose token it
// carries; notices for tokens the Hub did not give out, or for requests
// that have returned, are dropped.
func (p *inflight) onProgress(s *server, n *mcp.ProgressNotificationParams) {
	token, ok := n.ProgressToken.(string)
	if !ok {
		return
	}
	p.mu.Lock()
	sink := p.progress[token]
	p.mu.Unlock()
	if sink == nil {
		p.log.Debug("upstream: progress for no request in flight", "server", s.name)
		return
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if !sink.done {
		sink.fn(CallProgress{Progress: n.Progress, Total: n.Total, Message: n.Message})
	}
	sink.hand()
}

// noteMessage counts the notices in msg (a JSON-RPC message or batch
// server s wrote) that belong to a request in flight, as the transports
// read them and before the SDK decodes them: progress notices by their
// token, log messages (notifications/message) for the request they are
// tied to (see noteLog). See progressSink.
func (p *inflight) noteMessage(s *server, msg []byte) {
	if !bytes.Contains(msg, []byte(`"notifications/`)) {
		return
	}
	type notice struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	var ns []notice
	if b := bytes.TrimSpace(msg); len(b) > 0 && b[0] == '[' {
		if json.Unmarshal(b, &ns) != nil {
			return
		}
	} else {
		var n notice
		if json.Unmarshal(b, &n) != nil {
			return
		}
		ns = append(ns, n)
	}
	for _, n := range ns {
		switch n.Method {
		case "notifications/progress":
			var pp struct {
				ProgressToken any `json:"progressToken"`
			}
			if json.Unmarshal(n.Params, &pp) != nil {
				continue
			}
			token, ok := pp.ProgressToken.(string)
			if !ok {
				continue
			}
			p.mu.Lock()
			sink := p.progress[token]
			p.mu.Unlock()
			if sink != nil {
				sink.seen.Add(1)
			}
		case "notifications/message":
			p.noteLog(s, n.Params)
		}
	}
}

// requestOf finds the Hub request to s that a server→client request
// handled with ctx belongs to: the one that marked ctx (the SDK passes the
// Hub request's ctx to a multi round-trip result's requests), or else the
// only request in flight to s. With several in flight and no mark it
// cannot tell, and returns nil.
func (p *inflight) requestOf(ctx context.Context, s *server) *request {
	if r, ok := ctx.Value(requestKey{}).(*request); ok && r.server == s {
		return r
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.byServer[s]) != 1 {
		return nil
	}
	for r := range p.byServer[s] {
		return r
	}
	return nil
}

// joined is a ctx that ends with its Context (the upstream request's) and
// also has the values of values (the Hub request's caller's): a
// server→client request is handled with the values of the call that
// caused it. Its own Context is asked first, so that the context
// package finds its own cancellation there (keys of different packages
// never collide).
type joined struct {
	context.Context
	values context.Context
}

func (j joined) Value(key any) any {
	if v := j.Context.Value(key); v != nil {
		return v
	}
	return j.values.Value(key)
}

func (j joined) String() string {
	return fmt.Sprintf("upstream: server request ctx joined with %v", j.values)
}

// joinRequest returns the ctx a server→client request is handled with:
// it ends when the server's request is cancelled or when the Hub request
// it belongs to returns, and carries that request's values.
func joinRequest(ctx context.Context, r *request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(r.ctx, cancel)
	return joined{Context: ctx, values: r.ctx}, func() { stop(); cancel() }
}

package gateway

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Announcements of tool list changes on the server shared by every caller
// (stateless HTTP, MCP 2026-07-28) under a policy (issue 33). The SDK
// sends notifications/tools/list_changed to every subscriptions/listen
// stream that asked for it, whatever changed; a caller told of a change
// outside its scope (a pinned tool of a server it may not see joined, or
// that server said its tools changed) learns that something it cannot
// see moved. So each listen stream is told only when what its caller may
// see could have changed: the stream's caller is noted when it starts
// listening (heard, a receiving middleware), with a print of its visible
// list (its scope's pinned tools as listed, whether quarantined, and how
// many times each of their servers said its tools changed: toolsSaid);
// an announcement to the stream (quiet, a sending middleware) whose print
// is the one it last heard is dropped. Without a policy every stream
// hears every announcement, as before.

// listener is one subscriptions/listen stream of the shared server.
type listener struct {
	id    Identity
	print uint64 // of the visible list last announced (or at listen)
}

// listeners are the shared server's listen streams, by SDK session.
type listeners struct {
	mu sync.Mutex
	m  map[*sdk.ServerSession]*listener
}

// saidTools counts an upstream's word that its tools changed (toolsSaid),
// for the prints.
func (p *proxy) saidTools(server string) {
	p.saidMu.Lock()
	defer p.saidMu.Unlock()
	if p.said == nil {
		p.said = map[string]uint64{}
	}
	p.said[server]++
}

// print is a hash of the tool list id may see on the shared server: its
// scope's pinned tools as listed, their quarantine, and their servers'
// word that their tools changed.
func (p *proxy) print(id Identity) uint64 {
	a := p.accessOf(id)
	q := p.quarantine()
	h := fnv.New64a()
	p.saidMu.Lock()
	defer p.saidMu.Unlock()
	for _, pin := range p.pins() {
		if a.hides(pin.Name) {
			continue
		}
		t, ok := p.ts.Get(pin.Name)
		if !ok {
			h.Write([]byte("gone\x00" + pin.Name + "\x00"))
			continue
		}
		b, _ := json.Marshal(t)
		h.Write(b)
		if q.has(t.Name) {
			h.Write([]byte("\x00quarantined"))
		}
		var n [8]byte
		said := p.said[t.Server]
		for i := range n {
			n[i] = byte(said >> (8 * i))
		}
		h.Write(n[:])
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// heard notes the caller of each subscriptions/listen stream of the
// shared server, for quiet.
func (s *session) heard(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		ss, ok := req.GetSession().(*sdk.ServerSession)
		if method != "subscriptions/listen" || s.id != nil || !ok {
			return next(ctx, method, req)
		}
		id, _ := IdentityFrom(ctx)
		s.listen.mu.Lock()
		if s.listen.m == nil {
			s.listen.m = map[*sdk.ServerSession]*listener{}
		}
		s.listen.m[ss] = &listener{id: id, print: s.p.print(id)}
		s.listen.mu.Unlock()
		defer func() {
			s.listen.mu.Lock()
			delete(s.listen.m, ss)
			s.listen.mu.Unlock()
		}()
		return next(ctx, method, req)
	}
}

// quiet drops an announcement of a tool list change to a listen stream of
// the shared server whose caller's visible list is as it was when it last
// heard (see the top of this file).
func (s *session) quiet(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		ss, ok := req.GetSession().(*sdk.ServerSession)
		if method != "notifications/tools/list_changed" || s.id != nil || !ok || s.p.policy.Load() == nil {
			return next(ctx, method, req)
		}
		s.listen.mu.Lock()
		l := s.listen.m[ss]
		s.listen.mu.Unlock()
		if l == nil {
			return next(ctx, method, req)
		}
		print := s.p.print(l.id)
		s.listen.mu.Lock()
		same := l.print == print
		l.print = print
		s.listen.mu.Unlock()
		if same {
			return nil, nil
		}
		return next(ctx, method, req)
	}
}

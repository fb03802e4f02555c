package gateway

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"hash/maphash"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift/gateway/authn"
)

// Announcements of list changes on the server shared by every caller
// (stateless HTTP, MCP 2026-07-28) under a policy (issue 33). The SDK
// sends notifications/tools/list_changed, resources/list_changed and
// prompts/list_changed to every subscriptions/listen stream that asked
// for it, whatever changed; a caller told of a change outside its scope
// (a pinned tool of a server it may not see joined, or that server said
// its tools changed, or changed its resources, templates or prompts)
// learns that something it cannot see moved. So each listen stream is
// told only when what its caller may see could have changed: the
// stream's caller is noted when it starts listening (heard, a receiving
// middleware), with a print of each list it may see (tools, resources
// with templates, prompts: print); an announcement to the stream (quiet,
// a sending middleware) whose list's print is the one it last heard is
// dropped. Without a policy every stream hears every announcement, as
// before, and what it heard is no longer known (listener.stale): the
// first announcement of that kind under a policy set later is not
// dropped.
//
// A new policy (SetPolicy) changes what each caller may see, and nothing
// the shared server has registered: it registers every server's items
// whatever the policy, and scoped filters its answers per request. So the
// SDK, which announces only a change of what is registered, would tell no
// stream that its caller's lists changed, and a caller whose scope grew or
// shrank would list stale until some unrelated announcement came. So
// setPolicy makes the shared server announce each kind once
// (announcePolicy: each kind's item registered again as it is), and quiet
// lets through only the announcements whose print moved for the stream:
// the callers whose visible list of that kind changed hear it, the others
// do not. On the removal of a policy every stream hears all three, as
// every announcement without a policy.

// kind is what a list_changed announcement is of: one print each.
type kind int

const (
	toolsKind     kind = iota
	resourcesKind      // resources and resource templates: one announcement
	promptsKind
	kinds
)

// announced are the announcements quiet holds to a caller's scope.
var announced = map[string]kind{
	"notifications/tools/list_changed":     toolsKind,
	"notifications/resources/list_changed": resourcesKind,
	"notifications/prompts/list_changed":   promptsKind,
}

// listener is one subscriptions/listen stream of the shared server.
type listener struct {
	id     authn.Identity
	prints [kinds]uint64 // of each visible list last announced (or at listen)
	// stale: an announcement of that kind reached the stream without a
	// policy, so its print is not what the caller last heard.
	stale [kinds]bool
}

// listeners are the shared server's listen streams, by SDK session.
type listeners struct {
	mu sync.Mutex
	m  map[*mcp.ServerSession]*listener
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

// print is a hash of the list of kind k that id may see on the shared
// server (s): it changes when an item of that list joins or leaves or its
// definition changes, and not when only what id may not see changes.
func (s *session) print(id authn.Identity, k kind) uint64 {
	if k == toolsKind {
		return s.p.toolsPrint(id)
	}
	return s.featuresPrint(s.p.accessOf(id), k)
}

// toolsPrint is the print of the tool list id may see on the shared
// server: its scope's pinned tools as listed, their quarantine, and their
// servers' word that their tools changed.
func (p *proxy) toolsPrint(id authn.Identity) uint64 {
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

// printSeed seeds the prints of resources and prompts: they are compared
// within this process only.
var printSeed = maphash.MakeSeed()

// registered is an item the shared server has registered (featureSet): its
// URI, URI template or name, and the definition it was made from.
type registered struct{ key, def string }

// featuresPrint is the print of the resources and resource templates
// (resourcesKind) or the prompts (promptsKind) that a caller of access a
// (nil: every server's) may see on the shared server: what resources/list
// and resources/templates/list, or prompts/list, would answer it now.
//
// It hashes what the server has registered (s.feat, the URIs and
// definitions syncFeatures gave the SDK) held to the scope as scoped holds
// the answers (inScopeList with the Hub's lists now; a prompt by its
// server), not the Hub's lists held to the scope: the answers are made of
// the registered items, and the Hub runs ahead of them (syncFeatures
// registers a change after the Hub has it, and the SDK announces it a
// moment later). A print of the Hub's lists could take in a change not yet
// registered, so the caller would list without it, and then drop the
// announcement of its registration as already heard: the caller would keep
// a stale list. Registered items out of the caller's scope, and the
// namespacing another server's same URI brings (the caller is answered the
// plain URI either way), leave the print as it was. The items are summed
// as hashed, so the map's order does not matter; one pass over the
// server's items and the Hub's lists per call.
func (s *session) featuresPrint(a *access, k kind) uint64 {
	s.featMu.Lock()
	items := func(m map[string]string) []*registered {
		out := make([]*registered, 0, len(m))
		for key, def := range m {
			out = append(out, &registered{key, def})
		}
		return out
	}
	var lists [2][]*registered
	if k == resourcesKind {
		lists = [2][]*registered{items(s.feat.resources), items(s.feat.templates)}
	} else {
		lists[0] = items(s.feat.prompts)
	}
	s.featMu.Unlock()
	switch key := func(x *registered) *string { return &x.key }; {
	case a == nil:
	case k == resourcesKind:
		of, mine := s.p.resourceServers(a)
		lists[0] = inScopeList(lists[0], of, mine, key)
		of, mine = s.p.templateServers(a)
		lists[1] = inScopeList(lists[1], of, mine, key)
	default:
		of := s.p.promptServers()
		lists[0] = slices.DeleteFunc(lists[0], func(x *registered) bool { return !a.prompt(of, x.key) })
	}
	var h maphash.Hash
	h.SetSeed(printSeed)
	var sum uint64
	for i, list := range lists {
		for _, x := range list {
			h.Reset()
			h.WriteByte(byte(i))
			h.WriteString(x.key)
			h.WriteByte(0)
			h.WriteString(x.def)
			sum += h.Sum64()
		}
	}
	return sum
}

// heard notes the caller of each subscriptions/listen stream of the
// shared server, with the prints of the lists it may see, for quiet.
func (s *session) heard(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ss, ok := req.GetSession().(*mcp.ServerSession)
		if method != "subscriptions/listen" || s.id != nil || !ok {
			return next(ctx, method, req)
		}
		id, _ := authn.IdentityFrom(ctx)
		l := &listener{id: id}
		for k := range kinds {
			l.prints[k] = s.print(id, k)
		}
		s.listen.mu.Lock()
		if s.listen.m == nil {
			s.listen.m = map[*mcp.ServerSession]*listener{}
		}
		s.listen.m[ss] = l
		s.listen.mu.Unlock()
		defer func() {
			s.listen.mu.Lock()
			delete(s.listen.m, ss)
			s.listen.mu.Unlock()
		}()
		return next(ctx, method, req)
	}
}

// announcePolicy makes each server of every caller (the shared server of
// 2026-07-28) announce a change of its tools, resources and prompts once,
// after a new policy was stored (or the policy removed): see the top of
// this file. The sessions of one caller need none: setPolicy's
// toolsChanged and featuresChanged register their scope's items anew,
// and the SDK announces that.
func (p *proxy) announcePolicy() {
	for _, s := range p.liveSessions() {
		if s.id == nil {
			s.announceAll()
		}
	}
}

// announceAll makes the session's server announce
// notifications/tools/list_changed, resources/list_changed and
// prompts/list_changed, leaving what it has registered as it is: the SDK
// announces an item registered again (in one notification per kind, sent
// notificationDelay, 10 ms, after the last change of that kind), and has
// no other way. search_tools and the namespaced template are always
// registered; a prompt is registered again from the Hub's list only as it
// is registered (s.feat), and when none is, no caller may see a prompt on
// this server, before or after, so there is nothing to announce (a prompt
// the Hub has and the server has not yet registered is announced when
// syncFeatures registers it).
func (s *session) announceAll() {
	s.announceTools()
	s.addNamespaced()
	s.featMu.Lock()
	defer s.featMu.Unlock()
	for _, pr := range s.p.hub.Passthrough().Prompts(context.Background()) {
		if def, ok := s.feat.prompts[pr.Name]; !ok || def != string(pr.Raw) {
			continue
		}
		if sp, ok := servedPrompt(pr); ok {
			s.srv.AddPrompt(sp, s.getPrompt)
			return
		}
	}
}

// quiet drops an announcement of a list change (tools, resources or
// prompts) to a listen stream of the shared server whose caller's visible
// list of that kind is as it was when it last heard (see the top of this
// file), and a resource's update from a server out of the stream's
// caller's scope (subscribe.go).
func (s *session) quiet(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		k, announcement := announced[method]
		ss, ok := req.GetSession().(*mcp.ServerSession)
		if method == "notifications/resources/updated" && s.id == nil && ok && s.heldUpdate(ss) {
			return nil, nil // subscribe.go: its server is out of the stream's caller's scope
		}
		if !announcement || s.id != nil || !ok {
			return next(ctx, method, req)
		}
		s.listen.mu.Lock()
		l := s.listen.m[ss]
		if l != nil && s.p.policy.Load() == nil {
			// Heard without a print: the caller lists everything now, and
			// a policy set later must tell it whatever its print.
			l.stale[k] = true
			l = nil
		}
		s.listen.mu.Unlock()
		if l == nil {
			return next(ctx, method, req)
		}
		print := s.print(l.id, k)
		s.listen.mu.Lock()
		same := l.prints[k] == print && !l.stale[k]
		l.prints[k] = print
		l.stale[k] = false
		s.listen.mu.Unlock()
		if same {
			return nil, nil
		}
		return next(ctx, method, req)
	}
}

package gateway

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift/gateway/authn"
	"github.com/toolsift/toolsift/tool"
)

// session is one client session's state: its server and the found tools on
// its list, by last use. The proxy's own tools and the pinned ones are
// always listed and not counted here.
type session struct {
	p   *proxy
	srv *mcp.Server
	// static: the list is fixed (stateless HTTP, proxyOptions.Static):
	// found tools do not join it, and are called by name or through
	// call_tool (callByName).
	static bool
	// id is the caller of a session of one caller (an HTTP session, the
	// user who opened it; stdio, the Identity ServeStdio's ctx carries,
	// anonymous without): its list holds only the pinned tools in its
	// scope (policy.go), and its requests without an Identity of their
	// own are its. nil: a server of every caller (stateless HTTP), whose
	// list answers are filtered per request.
	id *authn.Identity

	mu    sync.Mutex
	found map[string]uint64 // found tool → tick of its last use
	tick  uint64
	// defs: listed tool (found or pinned) → its definition as listed
	// (JSON). A found or pinned tool without one is off the list because
	// the Toolset no longer has it (gone upstream, or its server down);
	// it is listed again when it comes back.
	defs map[string]string
	// listedFound: the found tools on the list, as listed. They are not
	// registered with the SDK server, whose AddTool decodes a tool's input
	// schema twice (a fresh 32 KiB buffer each: a search that lists five
	// tools spent ~300 KB there): foundTools puts them in the server's
	// tools/list answers and answers their calls. The pinned tools, the
	// same for the session's life, are registered.
	listedFound map[string]*mcp.Tool
	// foundChanged: listedFound changed since the clients were last told.
	foundChanged bool

	featMu sync.Mutex // resources, templates and prompts: see features.go
	feat   featureSet

	listen listeners // the shared server's listen streams: announce.go

	subs clientSubs // resource subscriptions: see subscribe.go
	// updating is held while the server passes an upstream's resource
	// update on (resourceUpdated), from names its server, for quiet.
	updating sync.Mutex
	from     string
}

// pins are the pinned tools on the session's list: those in its
// caller's scope (all for a server of every caller, or without a policy).
func (s *session) pins() []tool.Tool {
	all := s.p.pins()
	a := s.access()
	if a == nil {
		return all
	}
	return slices.DeleteFunc(slices.Clone(all), func(t tool.Tool) bool { return a.hides(t.Name) })
}

// access is what the session's one caller may reach; nil without a policy
// or for a server of every caller (its answers are filtered per request).
func (s *session) access() *access {
	if s.id == nil {
		return nil
	}
	return s.p.accessOf(*s.id)
}

// room is how many found tools a list may hold.
func (s *session) room() int {
	return max(0, s.p.opts.Search.MaxTools-2-len(s.pins()))
}

// list puts tools (best first) on the session's list, touching those already
// there, and evicts the least recently used found tools beyond the cap. It
// returns the names added and evicted. The SDK server debounces the
// tools/list_changed notification of the additions and removals into one.
func (s *session) list(tools []tool.Tool) (added, evicted []string) {
	if s.static {
		return nil, nil
	}
	pinned := map[string]bool{}
	for _, t := range s.pins() {
		pinned[t.Name] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.found == nil {
		s.found = map[string]uint64{}
	}
	room := s.room()
	var fresh []freshTool
	freshName := map[string]bool{}
	// The best tool is touched last, so that it is the most recent.
	for i := len(tools) - 1; i >= 0; i-- {
		t := tools[i]
		if pinned[t.Name] || room == 0 {
			continue
		}
		s.tick++
		if _, ok := s.found[t.Name]; ok {
			s.found[t.Name] = s.tick
			if _, listed := s.defs[t.Name]; !listed { // found again: it is back
				if st, def, ok := s.p.listings.get(t); ok {
					s.add(st, def, false)
					added = append(added, t.Name)
				}
			}
			continue
		}
		st, def, ok := s.p.listings.get(t)
		if !ok {
			continue
		}
		s.found[t.Name] = s.tick
		fresh = append(fresh, freshTool{st, def})
		freshName[t.Name] = true
	}
	for len(s.found) > room {
		var oldest string
		var at uint64
		for n, tk := range s.found {
			if oldest == "" || tk < at {
				oldest, at = n, tk
			}
		}
		delete(s.found, oldest)
		if freshName[oldest] {
			delete(freshName, oldest) // never listed: more found than room
			continue
		}
		if _, listed := s.defs[oldest]; !listed {
			continue // off the list already
		}
		evicted = append(evicted, oldest)
	}
	s.unlist(evicted...)
	for _, f := range fresh {
		if freshName[f.st.Name] {
			s.add(f.st, f.def, false)
			added = append(added, f.st.Name)
		}
	}
	s.announceFound()
	return added, evicted
}

// freshTool is a tool to list and its definition (proxy.listings).
type freshTool struct {
	st  *mcp.Tool
	def string
}

// add lists st on the session's server (replacing a tool of its name) and
// remembers its definition def, st as JSON (proxy.listings): a pinned tool
// registered with the SDK server, a found one in listedFound (the caller
// then calls announceFound). s.mu is held, or s is not shared yet.
func (s *session) add(st *mcp.Tool, def string, pinned bool) {
	if s.defs == nil {
		s.defs = map[string]string{}
	}
	s.defs[st.Name] = def
	if pinned {
		if _, found := s.listedFound[st.Name]; found { // pinned since it was found
			delete(s.listedFound, st.Name)
			s.foundChanged = true
		}
		s.srv.AddTool(st, s.callListed)
		return
	}
	if s.listedFound == nil {
		s.listedFound = map[string]*mcp.Tool{}
	}
	s.listedFound[st.Name] = st
	s.foundChanged = true
}

// unlist takes names off the session's list (the caller then calls
// announceFound). s.mu is held.
func (s *session) unlist(names ...string) {
	var registered []string
	for _, n := range names {
		delete(s.defs, n)
		if _, found := s.listedFound[n]; found {
			delete(s.listedFound, n)
			s.foundChanged = true
			continue
		}
		registered = append(registered, n)
	}
	if len(registered) > 0 {
		s.srv.RemoveTools(registered...)
	}
}

// announceFound tells the session's clients that its list changed when
// listedFound did (the SDK tells them of the registered tools' changes,
// and folds the two into one notifications/tools/list_changed). s.mu is
// held.
func (s *session) announceFound() {
	if s.foundChanged {
		s.foundChanged = false
		s.announceTools()
	}
}

// foundTools serves the found tools on the list (listedFound), which the
// SDK server does not know: a tools/list answer's first page gets them,
// all in name order as the SDK orders its own (the SDK pages only lists of
// more than 1,000 tools; a later page, asked for by its cursor, gets none,
// so no tool is listed twice), and a call of one is answered as the SDK
// answers a registered tool's (callListed, content never null, a client
// of 2026-07-28 told the call is complete). It is the innermost of the
// session's middleware: scoped (policy.go) filters its answers and checks
// its calls as those of the SDK.
func (s *session) foundTools(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/call":
			call, ok := req.(*mcp.CallToolRequest)
			if !ok || call.Params == nil {
				break
			}
			s.mu.Lock()
			_, found := s.listedFound[call.Params.Name]
			s.mu.Unlock()
			if !found {
				break
			}
			res, err := s.callListed(ctx, call)
			if err != nil || res == nil {
				return res, err // as the SDK returns a handler's
			}
			if res.Content == nil && !res.NeedsInput() {
				c := *res
				c.Content = []mcp.Content{}
				res = &c
			}
			if call.ProtocolVersion() >= wire2026 {
				res = completed(res) // roundtrip.go
			}
			return res, nil
		case "tools/list":
			if lr, ok := req.(*mcp.ListToolsRequest); ok && lr.Params != nil && lr.Params.Cursor != "" {
				break // a later page: the found tools came on the first
			}
			res, err := next(ctx, method, req)
			lr, ok := res.(*mcp.ListToolsResult)
			if err != nil || !ok || lr == nil {
				return res, err
			}
			s.mu.Lock()
			if len(s.listedFound) > 0 {
				tools := slices.Grow(slices.Clone(lr.Tools), len(s.listedFound))
				for _, st := range s.listedFound {
					tools = append(tools, st)
				}
				slices.SortFunc(tools, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
				lr.Tools = tools
			}
			s.mu.Unlock()
			return lr, nil
		}
		return next(ctx, method, req)
	}
}

// syncTools brings the listed tools in line with the Toolset: a listed
// tool whose definition is no longer the one listed is listed anew (a tool
// changed upstream, or accepted by Hub.Trust or toolbench trust: its
// readOnlyHint back); one the Toolset no longer has (removed upstream, or
// its server down) is taken off the list, so that the model is not offered
// a tool that cannot be called, and listed again when it comes back. The
// SDK tells the client (notifications/tools/list_changed).
func (s *session) syncTools() toolSync {
	q, a := s.p.quarantine(), s.access()
	pins := s.pins()
	pinned := make(map[string]bool, len(pins))
	for _, t := range pins {
		pinned[t.Name] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.announceFound()
	var d toolSync
	for _, name := range slices.Sorted(maps.Keys(s.defs)) {
		t, ok := s.p.ts.Get(name)
		if ok && a.hides(name) { // the policy changed (Gateway.SetPolicy): forgotten, found or pinned
			s.unlist(name)
			delete(s.found, name)
			d.OutOfScope = append(d.OutOfScope, name)
			continue
		}
		if !ok || q.has(name) {
			s.unlist(name)
			if ok {
				d.Quarantined = append(d.Quarantined, name)
			} else {
				d.Removed = append(d.Removed, name)
			}
			continue
		}
		st, def, ok := s.p.listings.get(t)
		if !ok {
			continue
		}
		if def != s.defs[name] {
			s.add(st, def, pinned[name])
			d.Replaced = append(d.Replaced, name)
		}
	}
	// The found and pinned tools off the list: back in the Toolset?
	off := slices.Collect(maps.Keys(s.found))
	for _, t := range pins {
		off = append(off, t.Name)
	}
	slices.Sort(off)
	for _, name := range off {
		if _, listed := s.defs[name]; listed {
			continue
		}
		if a.hides(name) {
			delete(s.found, name) // found off the list, out of scope since
			continue
		}
		if t, ok := s.p.ts.Get(name); ok && !q.has(name) && !a.hides(name) {
			if st, def, ok := s.p.listings.get(t); ok {
				s.add(st, def, pinned[name])
				d.Returned = append(d.Returned, name)
			}
		}
	}
	return d
}

// toolSync is what syncTools changed on a session's list.
type toolSync struct {
	Replaced []string // listed anew with their new definition
	Removed  []string // taken off: the Toolset no longer has them
	Returned []string // listed again: back in the Toolset (or accepted)
	// Quarantined are taken off: changed since first seen (quarantine.go).
	Quarantined []string
	// OutOfScope are taken off and forgotten: out of the session's
	// caller's scope since the policy changed (policy.go).
	OutOfScope []string
}

// merge adds d's tools to all's (each name once, sorted) and reports
// whether d changed anything.
func (d toolSync) merge(all *toolSync) bool {
	union := func(a, b []string) []string {
		for _, n := range b {
			if i, found := slices.BinarySearch(a, n); !found {
				a = slices.Insert(a, i, n)
			}
		}
		return a
	}
	all.Replaced = union(all.Replaced, d.Replaced)
	all.Removed = union(all.Removed, d.Removed)
	all.Returned = union(all.Returned, d.Returned)
	all.Quarantined = union(all.Quarantined, d.Quarantined)
	all.OutOfScope = union(all.OutOfScope, d.OutOfScope)
	return len(d.Replaced)+len(d.Removed)+len(d.Returned)+len(d.Quarantined)+len(d.OutOfScope) > 0
}

// log writes what changed, one record per kind.
func (d toolSync) log(l *slog.Logger) {
	if len(d.Replaced) > 0 {
		l.Info("tools listed anew", "tools", d.Replaced)
	}
	if len(d.Removed) > 0 {
		l.Info("tools taken off the list: no longer in the catalog", "tools", d.Removed)
	}
	if len(d.Returned) > 0 {
		l.Info("tools listed again: back in the catalog", "tools", d.Returned)
	}
	if len(d.OutOfScope) > 0 {
		l.Info("tools taken off the list: out of the caller's scope under the new policy", "tools", d.OutOfScope)
	}
	if len(d.Quarantined) > 0 {
		l.Warn("tools taken off the list: changed since first seen, quarantined until accepted (toolbench trust)", "tools", d.Quarantined)
	}
}

// touch marks a found tool as used now.
func (s *session) touch(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.found[name]; ok {
		s.tick++
		s.found[name] = s.tick
	}
}

// listed reports whether every one of tools is on the session's list.
func (s *session) listed(tools []tool.Tool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range tools {
		if _, ok := s.defs[t.Name]; ok {
			continue
		}
		if !slices.ContainsFunc(s.pins(), func(p tool.Tool) bool { return p.Name == t.Name }) {
			return false
		}
	}
	return true
}

// listens2026 reports whether the session's server has a session of MCP
// 2026-07-28 or later, which hears list changes only on a
// subscriptions/listen stream that asked for them (SEP-2575).
func (s *session) listens2026() bool {
	for ss := range s.srv.Sessions() {
		if ip := ss.InitializeParams(); ip != nil && ip.ProtocolVersion >= wire2026 {
			return true
		}
	}
	return false
}

// announceTools announces a change of the session's tool list
// (notifications/tools/list_changed) whether or not it changed: the SDK
// announces a tool registered again, and has no other way, so search_tools,
// always listed, is registered again as it is.
func (s *session) announceTools() { s.srv.AddTool(searchTool(), s.search) }

package gateway

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A tool that changed since it was first seen (a rug pull: the Hub's trust records,
// upstream.ServerStatus.Changed) is quarantined by the proxy: it is not listed,
// search_tools does not return it, and a call of it (by name or through
// call_tool) is refused with a result that names it, what changed and the
// command that accepts it. It comes back, listed anew, once the user
// accepts the new version: toolbench trust (the trust records on disk, read again
// before the next tools/list or call) or Hub.Trust in this process
// followed by proxy.toolsChanged. The Toolset still indexes it, so nothing
// is lost when it is accepted. A call is refused where the Hub routes it
// (gate, upstream.WithToolScope: the trust state of the listing that
// revealed the change), so that no call reaches a tool after the Hub has
// seen it change; the quarantine as read below serves the lists, the
// searches and the refusal of a call by the name of a tool off the list.

// quarantine is the tools changed since first seen, by qualified name.
type quarantine map[string]changed

type changed struct {
	server string
	what   []string
}

// quarantined is the quarantine as last read, and what it was read at.
// Searches, calls and tools/lists ask for it on every request; reading
// the Hub's status takes the Hub's lock and copies every server's status
// (its warnings, stderr tail and changed tools), so it is read again only
// when the catalog's generation or the proxy's trust epoch moved.
type quarantined struct {
	mu         sync.Mutex
	gen, epoch uint64
	read       bool
	q          quarantine // read-only once stored
}

// quarantine returns the changed tools: the ones last read from the Hub's
// status while neither the index's generation nor the trust epoch
// (proxy.toolsChanged) moved since. Every change to a tool's trust state
// moves one of them after it is made: a server's re-list sets its changed
// tools before the index applies the change, and Hub.Trust, toolbench trust
// (ReloadTrust) and every change the Hub reports (toolsift serve's
// toolsift.Options.OnChange, which a proxy needs in any case to keep its
// lists current) are followed by toolsChanged: a tool whose output schema
// alone changed moves no generation, only the epoch. The key is read before
// the status, so a read that races a change is stored under the older key
// and read again.
func (p *proxy) quarantine() quarantine {
	gen, epoch := p.ts.Generation(), p.trustEpoch.Load()
	c := &p.quar
	c.mu.Lock()
	if c.read && c.gen == gen && c.epoch == epoch {
		q := c.q
		c.mu.Unlock()
		return q
	}
	c.mu.Unlock()
	q := p.readQuarantine()
	c.mu.Lock()
	c.q, c.gen, c.epoch, c.read = q, gen, epoch, true
	c.mu.Unlock()
	return q
}

// readQuarantine reads the changed tools from the Hub's status.
func (p *proxy) readQuarantine() quarantine {
	q := quarantine{}
	for _, st := range p.hub.Status() {
		for _, c := range st.Changed {
			q[c.Name] = changed{server: st.Name, what: c.What}
		}
	}
	return q
}

// has reports whether the tool is quarantined.
func (q quarantine) has(name string) bool {
	_, ok := q[name]
	return ok
}

// refusal is the text of a refused call of a quarantined tool.
func (q quarantine) refusal(name string) (string, bool) {
	c, ok := q[name]
	if !ok {
		return "", false
	}
	return fmt.Sprintf("tool %q is quarantined and was not called: it changed since it was first seen (%s). "+
		"A changed tool is neither listed nor called until the user reviews and accepts the new version: "+
		"toolbench trust --config CONFIG %s %s (the config toolsift serve runs with); toolsift serve takes the acceptance at its next request",
		name, strings.Join(c.what, ", "), c.server, name), true
}

// refuseQuarantined answers a tools/call of a quarantined tool by its own
// name: it is off the list, and the SDK would only say "unknown tool".
func (s *session) refuseQuarantined(ctx context.Context, method string, req mcp.Request) (mcp.Result, bool) {
	if method != "tools/call" {
		return nil, false
	}
	cr, ok := req.(*mcp.CallToolRequest)
	if !ok || cr.Params == nil || s.p.access(ctx).hides(cr.Params.Name) { // out of scope: unknown (policy.go)
		return nil, false
	}
	msg, ok := s.p.quarantine().refusal(cr.Params.Name)
	if !ok {
		return nil, false
	}
	res := s.p.refuseQuarantined(ctx, cr.Session, cr.Params.Name, msg)
	if cr.ProtocolVersion() >= wire2026 {
		res = completed(res) // a middleware's answer: the SDK does not mark it (roundtrip.go)
	}
	return res, true
}

package proxy

import (
	"context"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A tool that changed since it was first seen (a rug pull: the Hub's trust records,
// mcp.ServerStatus.Changed) is quarantined by the proxy: it is not listed,
// search_tools does not return it, and a call of it (by name or through
// call_tool) is refused with a result that names it, what changed and the
// command that accepts it. It comes back, listed anew, once the user
// accepts the new version: toolbench trust (the trust records on disk, read again
// before the next tools/list or call) or Hub.Trust in this process
// followed by Proxy.ToolsChanged. The Toolset still indexes it, so nothing
// is lost when it is accepted.

// quarantine is the tools changed since first seen, by qualified name.
type quarantine map[string]changed

type changed struct {
	server string
	what   []string
}

// quarantine reads the changed tools from the Hub's status.
func (p *Proxy) quarantine() quarantine {
	q := quarantine{}
	for _, st := range p.ts.Hub().Status() {
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
func (s *session) refuseQuarantined(ctx context.Context, method string, req sdk.Request) (sdk.Result, bool) {
	if method != "tools/call" {
		return nil, false
	}
	cr, ok := req.(*sdk.CallToolRequest)
	if !ok || cr.Params == nil {
		return nil, false
	}
	msg, ok := s.p.quarantine().refusal(cr.Params.Name)
	if !ok {
		return nil, false
	}
	s.p.logger(cr.Session).Warn("call refused: tool quarantined", "tool", cr.Params.Name)
	return errorResult("%s", msg), true
}

package gateway

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift/think"
)

// freshen lists again, before a client's tools/list or search_tools, the
// upstream servers whose tool lists have outlived the ttlMs they came with
// (upstream.Hub.Freshen; MCP 2026-07-28). It costs nothing while every list is
// fresh; a failure is logged, and the client gets the lists as they are.
func (s *session) freshen(ctx context.Context, method string, req mcp.Request) {
	if method != "tools/list" {
		call, ok := req.(*mcp.CallToolRequest)
		if !ok || call.Params == nil || call.Params.Name != think.SearchToolName {
			return
		}
	}
	if err := s.p.hub.Freshen(ctx); err != nil && ctx.Err() == nil {
		s.p.log.Warn("tool lists past their ttlMs not listed again", "error", err)
	}
}

package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift/upstream"
)

// complete answers completion/complete through the Hub, which routes a
// prompt by its qualified name and a resource template by its URI template
// to the upstream server that offers it; the server's result passes
// through.
func (s *session) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	start := time.Now()
	c := upstream.Completion{Argument: req.Params.Argument.Name, Value: req.Params.Argument.Value}
	switch req.Params.Ref.Type {
	case "ref/prompt":
		c.Prompt = req.Params.Ref.Name
	case "ref/resource":
		c.ResourceURI = req.Params.Ref.URI
	}
	if req.Params.Context != nil {
		c.Context = req.Params.Context.Arguments
	}
	pt := s.p.hub.Passthrough()
	if srv := s.p.perUser.featureServer(pt, c.Prompt, c.ResourceURI); srv != "" {
		return nil, errPerUserFeature(srv)
	}
	raw, err := pt.Complete(withSession(ctx, req.Session), c)
	s.p.logger(ctx, req.Session).Info("complete", "prompt", c.Prompt, "uri", c.ResourceURI, "argument", c.Argument, "duration", time.Since(start), "error", err)
	if err != nil {
		return nil, err
	}
	var res mcp.CompleteResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("complete %s%s: the server's result: %w", c.Prompt, c.ResourceURI, err)
	}
	return &res, nil
}

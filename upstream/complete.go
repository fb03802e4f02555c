package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Completion is a completion/complete request: suggestions for one
// argument of a prompt or of a resource template.
type Completion struct {
	// Prompt is the prompt's qualified name (see Prompts), or
	// ResourceURI the resource template's URI template (or a resource's
	// URI): one of the two.
	Prompt, ResourceURI string
	// Argument is the argument's name, Value what the user typed so far.
	Argument, Value string
	// Context holds the values of the arguments already given.
	Context map[string]string
}

// ErrUnknownCompletion is Complete's error when no server offers what a
// Completion refers to.
var ErrUnknownCompletion = errors.New("upstream: unknown completion reference")

// Complete asks the server that offers c's prompt (by qualified name) or
// resource template (by URI template, else as ReadResource routes a URI)
// for completions, and returns the server's CompleteResult as JSON
// (completion: values, total, hasMore). Errors are those of ReadResource,
// with ErrUnknownCompletion; a server without completions answers with a
// JSON-RPC error (an *RPCError).
func (h *Hub) Complete(ctx context.Context, c Completion) (json.RawMessage, error) {
	ref := &mcp.CompleteReference{Type: "ref/prompt", Name: c.Prompt}
	name := c.Prompt
	in := inScope(ctx)
	h.mu.Lock()
	var s *server
	switch {
	case c.Prompt != "" && c.ResourceURI != "":
		h.mu.Unlock()
		return nil, fmt.Errorf("%w: a completion names a prompt (%q) or a resource (%q), not both", ErrUnknownCompletion, c.Prompt, c.ResourceURI)
	case c.Prompt != "":
		for _, n := range h.order {
			srv := h.servers[n]
			if !srv.offersTools() || !in(srv.name) {
				continue
			}
			if i := slices.IndexFunc(srv.feat.prompts, func(p Prompt) bool { return p.Name == c.Prompt }); i >= 0 {
				s, ref.Name = srv, srv.feat.prompts[i].OriginalName
				break
			}
		}
	default:
		ref, name = &mcp.CompleteReference{Type: "ref/resource", URI: c.ResourceURI}, c.ResourceURI
		for _, n := range h.order {
			srv := h.servers[n]
			if srv.offersTools() && in(srv.name) && slices.ContainsFunc(srv.feat.templates, func(t ResourceTemplate) bool { return t.URITemplate == c.ResourceURI }) {
				s = srv
				break
			}
		}
		if s == nil {
			if srv, orig, err := h.resourceServer(c.ResourceURI, in); err == nil {
				s, ref.URI = srv, orig
			}
		}
	}
	h.mu.Unlock()
	if s == nil {
		return nil, fmt.Errorf("%w: %q: no server offers it", ErrUnknownCompletion, name)
	}
	params := &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: c.Argument, Value: c.Value}}
	if len(c.Context) > 0 {
		params.Context = &mcp.CompleteContext{Arguments: c.Context}
	}
	raw, err := h.request(ctx, s, "complete "+name, name, noProgressToken{}, func(ctx context.Context, cs *mcp.ClientSession) (any, error) {
		return cs.Complete(ctx, params)
	})
	return raw, h.redact.Err(err)
}

// noProgressToken stands for params without a progress token
// (completion/complete has none).
type noProgressToken struct{}

func (noProgressToken) SetProgressToken(any) {}

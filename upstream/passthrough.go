package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A Passthrough is what a proxy forwards of a Hub's servers besides their
// tools: their resources, resource templates and prompts, reads, prompts
// got, completions and resource subscriptions (see the package doc,
// "Passthrough"). Get it with Hub.Passthrough; it lives and ends with its
// Hub. Each method routes as the package doc says, among the servers in
// the scope of its ctx (WithServerScope): a server out of scope is as
// absent. Its methods are safe for concurrent use.
type Passthrough struct {
	h      *Hub
	calls  inflight      // requests in flight: progress, logs, server→client requests
	subs   subscriptions // resources/subscribe, counted
	listMu sync.Mutex    // HubOptions.OnListChange calls, one at a time
}

// Errors of ReadResource and GetPrompt, wrapped with the URI or name.
var (
	ErrUnknownResource = errors.New("upstream: unknown resource")
	ErrUnknownPrompt   = errors.New("upstream: unknown prompt")
)

// ErrUnknownCompletion is Complete's error when no server offers what a
// Completion refers to.
var ErrUnknownCompletion = errors.New("upstream: unknown completion reference")

// Resource is a resource a server lists. Its URI is the server's, unchanged
// (clients show it, file:// URIs stay usable, and resource links in tool
// results keep pointing at it), unless another server lists the same URI:
// then each has it under a namespaced URI (toolsift:SERVER/URI, see
// resources.go). Its Name is qualified like a tool's.
type Resource struct {
	URI string `json:"uri"`
	// Name is QualifiedName(Server, OriginalName).
	Name         string `json:"name"`
	Server       string `json:"server"`
	OriginalName string `json:"original_name"`
	Title        string `json:"title,omitempty"`
	Description  string `json:"description,omitempty"`
	MIMEType     string `json:"mime_type,omitempty"`
	// Raw is the resource as the server listed it (re-encoded by the SDK:
	// annotations, size, icons, _meta), with its original name.
	Raw json.RawMessage `json:"raw"`
}

// ResourceTemplate is a resource template a server lists; URIs that match
// it are read from that server.
type ResourceTemplate struct {
	URITemplate  string          `json:"uri_template"`
	Name         string          `json:"name"`
	Server       string          `json:"server"`
	OriginalName string          `json:"original_name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	MIMEType     string          `json:"mime_type,omitempty"`
	Raw          json.RawMessage `json:"raw"`
}

// Prompt is a prompt a server lists, under a name qualified like a tool's.
type Prompt struct {
	Name         string           `json:"name"`
	Server       string           `json:"server"`
	OriginalName string           `json:"original_name"`
	Title        string           `json:"title,omitempty"`
	Description  string           `json:"description,omitempty"`
	Arguments    []PromptArgument `json:"arguments,omitempty"`
	// Raw is the prompt as the server listed it, with its original name.
	Raw json.RawMessage `json:"raw"`
}

// PromptArgument is one argument of a Prompt.
type PromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

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

// Resources returns the resources of the servers in ctx's scope (every
// server without WithServerScope) whose tools are offered (see Hub.Tools),
// by server name, then in the server's order. A lazy server's are those of
// its last session: none before it first starts.
//
// A URI that several of those servers list is given each under its
// namespaced URI (resources.go), so that every resource is listed and read
// from its own server; a URI that one server in scope lists is given under
// its plain URI, whatever servers out of scope list, and ReadResource
// under the same scope reads it from that server. So a caller of a scope
// learns nothing of the others.
func (p *Passthrough) Resources(ctx context.Context) []Resource {
	return namespaced(offered(p.h, inScope(ctx), func(f *features) []Resource { return f.resources }),
		func(r *Resource) *string { return &r.URI }, func(r Resource) string { return r.Server })
}

// ResourceTemplates returns the resource templates of the servers in ctx's
// scope whose tools are offered, namespaced among them, like Resources.
func (p *Passthrough) ResourceTemplates(ctx context.Context) []ResourceTemplate {
	return namespaced(offered(p.h, inScope(ctx), func(f *features) []ResourceTemplate { return f.templates }),
		func(t *ResourceTemplate) *string { return &t.URITemplate }, func(t ResourceTemplate) string { return t.Server })
}

// Prompts returns the prompts of the servers in ctx's scope whose tools
// are offered, like Resources, sorted by qualified name.
func (p *Passthrough) Prompts(ctx context.Context) []Prompt {
	out := offered(p.h, inScope(ctx), func(f *features) []Prompt { return f.prompts })
	slices.SortFunc(out, func(a, b Prompt) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// ReadResource reads the resource uri from the server that offers it (see
// resources.go for how URIs route: never to a server that did not list,
// link or template it, and never a guess between two) and returns the
// server's ReadResourceResult as JSON (contents with their text or base64
// blob, _meta). A lazy server is started first. The error wraps
// ErrUnknownResource, ErrAmbiguousResource, tool.ErrUnavailable,
// ErrClosed, ctx's error, or an *RPCError with the server's JSON-RPC error
// (such as a resource it does not have), and names the server.
func (p *Passthrough) ReadResource(ctx context.Context, uri string) (json.RawMessage, error) {
	h := p.h
	h.mu.Lock()
	s, uri, err := p.resourceServer(uri, inScope(ctx)) // resources.go
	h.mu.Unlock()
	if err != nil {
		return nil, err
	}
	params := &mcp.ReadResourceParams{URI: uri}
	raw, err := s.request(ctx, "read resource "+uri, uri, params, func(ctx context.Context, cs *mcp.ClientSession) (any, error) {
		if _, err := passRound(ctx, cs, params); err != nil {
			return nil, err
		}
		return cs.ReadResource(ctx, params)
	})
	return raw, h.redact.Err(err)
}

// GetPrompt gets the prompt of the given qualified name (see Prompts) with
// args from its server and returns the server's GetPromptResult as JSON
// (description, messages). Errors are those of ReadResource, with
// ErrUnknownPrompt.
func (p *Passthrough) GetPrompt(ctx context.Context, name string, args map[string]string) (json.RawMessage, error) {
	h := p.h
	h.mu.Lock()
	s, orig := p.promptServer(name, inScope(ctx))
	h.mu.Unlock()
	if s == nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknownPrompt, name)
	}
	params := &mcp.GetPromptParams{Name: orig, Arguments: args}
	raw, err := s.request(ctx, "get prompt "+name, name, params, func(ctx context.Context, cs *mcp.ClientSession) (any, error) {
		if _, err := passRound(ctx, cs, params); err != nil {
			return nil, err
		}
		return cs.GetPrompt(ctx, params)
	})
	return raw, h.redact.Err(err)
}

// Complete asks the server that offers c's prompt (by qualified name) or
// resource template (by URI template, else as ReadResource routes a URI)
// for completions, and returns the server's CompleteResult as JSON
// (completion: values, total, hasMore). Errors are those of ReadResource,
// with ErrUnknownCompletion; a server without completions answers with a
// JSON-RPC error (an *RPCError).
func (p *Passthrough) Complete(ctx context.Context, c Completion) (json.RawMessage, error) {
	h := p.h
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
		s, ref.Name = p.promptServer(c.Prompt, in)
	default:
		ref, name = &mcp.CompleteReference{Type: "ref/resource", URI: c.ResourceURI}, c.ResourceURI
		for _, srv := range h.order {
			if srv.offersTools() && in(srv.name) && slices.ContainsFunc(srv.feat.templates, func(t ResourceTemplate) bool { return t.URITemplate == c.ResourceURI }) {
				s = srv
				break
			}
		}
		if s == nil {
			if srv, orig, err := p.resourceServer(c.ResourceURI, in); err == nil {
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
	raw, err := s.request(ctx, "complete "+name, name, noProgressToken{}, func(ctx context.Context, cs *mcp.ClientSession) (any, error) {
		return cs.Complete(ctx, params)
	})
	return raw, h.redact.Err(err)
}

// Subscribe asks the server that offers the resource uri (routed as
// ReadResource routes it) to tell of its updates (resources/subscribe);
// HubOptions.OnResourceUpdated hears them. Subscriptions are counted, for
// a proxy whose clients subscribe to the same resource: the server is
// asked on the first, and Unsubscribe asks it to stop on the last. Errors
// are those of ReadResource; a server that does not offer subscriptions
// answers with a JSON-RPC error (an *RPCError), and the subscription is
// not counted. A subscription to a server out of ctx's scope is none of
// this caller's: not counted, not ended by it.
//
// A server that restarts forgets its subscriptions: the Hub sends them
// again when it is back.
func (p *Passthrough) Subscribe(ctx context.Context, uri string) error {
	return p.subscription(ctx, uri, true)
}

// Unsubscribe ends a subscription Subscribe made; see Subscribe. An
// unsubscribe of a resource with no subscription is an error wrapping
// ErrUnknownResource.
func (p *Passthrough) Unsubscribe(ctx context.Context, uri string) error {
	return p.subscription(ctx, uri, false)
}

// promptServer finds the server in scope in whose offered prompts have the
// qualified name, and the prompt's name there; nil when none. h.mu is held.
func (p *Passthrough) promptServer(name string, in func(string) bool) (*server, string) {
	h := p.h
	for _, s := range h.order {
		if !s.offersTools() || !in(s.name) {
			continue
		}
		if i := slices.IndexFunc(s.feat.prompts, func(pr Prompt) bool { return pr.Name == name }); i >= 0 {
			return s, s.feat.prompts[i].OriginalName
		}
	}
	return nil, ""
}

// offered joins what pick takes of the features of the servers in scope in
// whose tools are offered, in the Hub's server order.
func offered[T any](h *Hub, in func(string) bool, pick func(*features) []T) []T {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []T
	for _, s := range h.order {
		if s.offersTools() && in(s.name) {
			out = append(out, pick(&s.feat)...)
		}
	}
	return out
}

// request makes a request other than tools/call to s: it starts s when it
// is lazy, keeps it from going idle meanwhile, registers the request (see
// inflight.begin), ends it when the Hub closes, and returns the result as
// JSON.
func (s *server) request(ctx context.Context, op, name string, params progressParams, do func(context.Context, *mcp.ClientSession) (any, error)) (json.RawMessage, error) {
	h := s.h
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", op, ErrClosed)
	}
	defer s.using()()
	if _, err := s.start(ctx); err != nil {
		h.mu.Unlock()
		if errors.Is(err, ErrClosed) {
			return nil, fmt.Errorf("%s: %w", op, ErrClosed)
		}
		return nil, fmt.Errorf("%s (server %s): starting the server: %w", op, s.name, err)
	}
	cs, state, why := s.session, s.state, s.err
	h.mu.Unlock()
	if cs == nil || state != StateReady {
		if why != nil {
			return nil, fmt.Errorf("%w: %s: server %s is %s: %w", errServerUnavailable, op, s.name, state, why)
		}
		return nil, fmt.Errorf("%w: %s: server %s is %s", errServerUnavailable, op, s.name, state)
	}
	if s.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.Timeout)
		defer cancel()
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer context.AfterFunc(h.life, func() { cancel(ErrClosed) })()
	ctx, end := h.pt.calls.begin(ctx, s, name, params)
	defer end()
	ctx, status := withHTTPStatus(ctx)
	res, err := do(ctx, cs)
	if err != nil {
		return nil, s.requestErr(ctx, op, status, err)
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("%s (server %s): encoding the result: %w", op, s.name, err)
	}
	return raw, nil
}

// requestErr names the server and the operation in a failed request's
// error, keeping a JSON-RPC error the server answered as an *RPCError and
// the status of an HTTP error the request got (status).
func (s *server) requestErr(ctx context.Context, op string, status *httpStatus, err error) error {
	var rpcErr *jsonrpc.Error
	switch {
	case s.h.life.Err() != nil:
		return fmt.Errorf("%s (server %s): %w", op, s.name, ErrClosed)
	case ctx.Err() != nil:
		return fmt.Errorf("%s (server %s): %w", op, s.name, context.Cause(ctx))
	case errors.As(err, &rpcErr) && rpcErr.Code != codeRejected: // (not the transport's own)
		return fmt.Errorf("%s (server %s): %w", op, s.name, status.explain(op, &RPCError{Code: rpcErr.Code, Message: rpcErr.Message, Data: rpcErr.Data}))
	}
	return fmt.Errorf("%w: %s (server %s): %w", errServerUnavailable, op, s.name, status.explain(op, err))
}

// noProgressToken stands for params without a progress token
// (completion/complete and resources/subscribe have none).
type noProgressToken struct{}

func (noProgressToken) SetProgressToken(any) {}

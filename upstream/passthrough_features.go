package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"
)

// Errors of ReadResource and GetPrompt, wrapped with the URI or name.
var (
	ErrUnknownResource = errors.New("upstream: unknown resource")
	ErrUnknownPrompt   = errors.New("upstream: unknown prompt")
)

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

// ListChange says that a server's resources (and resource templates) or
// prompts changed: it sent notifications/resources/list_changed or
// notifications/prompts/list_changed, or it (re)connected with other
// lists; or that it said its tools changed. What changed in its tools is
// told through HubOptions.OnChange.
type ListChange struct {
	Server             string
	Resources, Prompts bool
	// Tools: the server sent notifications/tools/list_changed (or Refresh
	// asked, as if it had), and its tools were listed again, whether or not
	// they differ: a difference reached HubOptions.OnChange first. A
	// program that announces list changes to clients of its own can pass
	// the server's word on: a spurious announcement costs a client one
	// list, a missed one leaves it with a stale list (a server that
	// registers a tool again, with the same definition, says its list
	// changed, and a client of that server would hear it).
	Tools bool
}

// featKind is a set of the lists a server keeps besides tools.
type featKind uint32

const (
	featResources featKind = 1 << iota
	featPrompts
)

// maxSeenURIs bounds the resource URIs remembered per server from its
// call results.
const maxSeenURIs = 1024

// features is what a server lists besides tools. pending and wake pass
// list_changed notifications to the supervisor; the lists are guarded by
// Hub.mu.
type features struct {
	once    sync.Once
	wake    chan struct{} // capacity 1
	pending atomic.Uint32 // featKinds to list again

	resources []Resource
	templates []ResourceTemplate
	matchers  []*uritemplate.Template // templates', in order; nil when unparsable
	prompts   []Prompt
	// seen are URIs of resource links and embedded resources in s's call
	// results, so that reading them routes to s.
	seen map[string]bool
}

func (f *features) signal() chan struct{} {
	f.once.Do(func() { f.wake = make(chan struct{}, 1) })
	return f.wake
}

// changed notes that the server says the lists of k changed; its
// supervisor lists them again.
func (f *features) changed(k featKind) {
	for {
		old := f.pending.Load()
		if f.pending.CompareAndSwap(old, old|uint32(k)) {
			break
		}
	}
	select {
	case f.signal() <- struct{}{}:
	default:
	}
}

// take returns the kinds to list again and clears them.
func (f *features) take() featKind { return featKind(f.pending.Swap(0)) }

// listFeatures lists the resources, resource templates and prompts of s
// that k names and the server offers, stores them and tells
// HubOptions.OnListChange when they changed; it reports whether they did.
// A failure keeps the old lists and is logged: tools matter more, and the
// next list_changed tries again. A server that offers none has none, even
// if its cache entry said otherwise.
func (h *Hub) listFeatures(s *server, cs *mcp.ClientSession, k featKind) bool {
	init := cs.InitializeResult()
	if init == nil || init.Capabilities == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(h.life, s.connectTimeout())
	defer cancel()
	var ch ListChange
	var res []Resource
	var tmpl []ResourceTemplate
	var err error
	if k&featResources != 0 && init.Capabilities.Resources != nil {
		res, tmpl, err = listResources(ctx, s, cs)
	}
	if k&featResources != 0 {
		if err != nil {
			if h.life.Err() == nil { // not cancelled by Close
				h.opts.Logger.Warn("upstream: listing resources failed", "server", s.name, "error", h.redact.Err(err))
			}
		} else {
			matchers := make([]*uritemplate.Template, len(tmpl))
			for i, t := range tmpl {
				matchers[i], _ = uritemplate.New(t.URITemplate)
			}
			h.mu.Lock()
			ch.Resources = !slices.EqualFunc(s.feat.resources, res, func(a, b Resource) bool { return string(a.Raw) == string(b.Raw) }) ||
				!slices.EqualFunc(s.feat.templates, tmpl, func(a, b ResourceTemplate) bool { return string(a.Raw) == string(b.Raw) })
			s.feat.resources, s.feat.templates, s.feat.matchers = res, tmpl, matchers
			h.mu.Unlock()
		}
	}
	var prompts []Prompt
	err = nil
	if k&featPrompts != 0 && init.Capabilities.Prompts != nil {
		prompts, err = listPrompts(ctx, s, cs)
	}
	if k&featPrompts != 0 {
		if err != nil {
			if h.life.Err() == nil { // not cancelled by Close
				h.opts.Logger.Warn("upstream: listing prompts failed", "server", s.name, "error", h.redact.Err(err))
			}
		} else {
			h.mu.Lock()
			ch.Prompts = !slices.EqualFunc(s.feat.prompts, prompts, func(a, b Prompt) bool { return string(a.Raw) == string(b.Raw) })
			s.feat.prompts = prompts
			h.mu.Unlock()
		}
	}
	if (ch.Resources || ch.Prompts) && h.opts.OnListChange != nil {
		ch.Server = s.name
		h.pt.listMu.Lock()
		h.opts.OnListChange(ch)
		h.pt.listMu.Unlock()
	}
	return ch.Resources || ch.Prompts
}

// cachedFeatures are a server's lists as its cache entry keeps them, so
// that a lazy server's resources and prompts are listed before it starts.
type cachedFeatures struct {
	Resources []Resource         `json:"resources,omitempty"`
	Templates []ResourceTemplate `json:"templates,omitempty"`
	Prompts   []Prompt           `json:"prompts,omitempty"`
}

// cached returns the lists for s's cache entry; nil when there are none.
// Hub.mu is held.
func (f *features) cached() *cachedFeatures {
	if len(f.resources)+len(f.templates)+len(f.prompts) == 0 {
		return nil
	}
	return &cachedFeatures{Resources: f.resources, Templates: f.templates, Prompts: f.prompts}
}

// restore takes the lists of server's cache entry, unless they are not
// its own (then the server lists them when it starts). Hub.mu is held.
func (f *features) restore(server string, c *cachedFeatures) {
	if c == nil {
		return
	}
	for _, r := range c.Resources {
		if r.Server != server || r.Name != QualifiedName(server, r.OriginalName) {
			return
		}
	}
	for _, r := range c.Templates {
		if r.Server != server || r.Name != QualifiedName(server, r.OriginalName) {
			return
		}
	}
	for _, p := range c.Prompts {
		if p.Server != server || p.Name != QualifiedName(server, p.OriginalName) {
			return
		}
	}
	// The entry is indented; lists compare by their compact JSON.
	for i := range c.Resources {
		c.Resources[i].Raw = compact(c.Resources[i].Raw)
	}
	for i := range c.Templates {
		c.Templates[i].Raw = compact(c.Templates[i].Raw)
	}
	for i := range c.Prompts {
		c.Prompts[i].Raw = compact(c.Prompts[i].Raw)
	}
	f.resources, f.templates, f.prompts = c.Resources, c.Templates, c.Prompts
	f.matchers = make([]*uritemplate.Template, len(f.templates))
	for i, t := range f.templates {
		f.matchers[i], _ = uritemplate.New(t.URITemplate)
	}
}

func listResources(ctx context.Context, s *server, cs *mcp.ClientSession) ([]Resource, []ResourceTemplate, error) {
	var res []Resource
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			return nil, nil, s.describe(ctx, nil, "resources/list", err)
		}
		raw, err := json.Marshal(r)
		if err != nil {
			continue
		}
		res = append(res, Resource{URI: r.URI, Name: QualifiedName(s.name, r.Name), Server: s.name, OriginalName: r.Name,
			Title: r.Title, Description: r.Description, MIMEType: r.MIMEType, Raw: raw})
	}
	var tmpl []ResourceTemplate
	for t, err := range cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			if methodNotFound(err) {
				// The resources capability does not promise templates:
				// many servers list resources and answer -32601 here.
				return res, nil, nil
			}
			return nil, nil, s.describe(ctx, nil, "resources/templates/list", err)
		}
		raw, err := json.Marshal(t)
		if err != nil {
			continue
		}
		tmpl = append(tmpl, ResourceTemplate{URITemplate: t.URITemplate, Name: QualifiedName(s.name, t.Name), Server: s.name, OriginalName: t.Name,
			Title: t.Title, Description: t.Description, MIMEType: t.MIMEType, Raw: raw})
	}
	return res, tmpl, nil
}

// methodNotFound reports whether err is the server's JSON-RPC "method not
// found" answer.
func methodNotFound(err error) bool {
	var rpcErr *jsonrpc.Error
	return errors.As(err, &rpcErr) && rpcErr.Code == jsonrpc.CodeMethodNotFound
}

func listPrompts(ctx context.Context, s *server, cs *mcp.ClientSession) ([]Prompt, error) {
	var out []Prompt
	seen := map[string]bool{}
	for p, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			return nil, s.describe(ctx, nil, "prompts/list", err)
		}
		raw, err := json.Marshal(p)
		if err != nil || seen[p.Name] {
			continue
		}
		seen[p.Name] = true
		pr := Prompt{Name: QualifiedName(s.name, p.Name), Server: s.name, OriginalName: p.Name, Title: p.Title, Description: p.Description, Raw: raw}
		for _, a := range p.Arguments {
			if a != nil {
				pr.Arguments = append(pr.Arguments, PromptArgument{Name: a.Name, Title: a.Title, Description: a.Description, Required: a.Required})
			}
		}
		out = append(out, pr)
	}
	return out, nil
}

// Resources returns the resources of every server whose tools are offered
// (see Tools), by server name, then in the server's order. A lazy server's
// are those of its last session: none before it first starts.
//
// A URI that several servers list is given each under its namespaced URI
// (resources.go), so that every resource is listed and read from its own
// server.
func (h *Hub) Resources() []Resource { return h.ResourcesIn(everyServer) }

// ResourcesIn returns the resources of the servers in (a scope, as
// WithServerScope takes it) like Resources, namespacing only the URIs
// that several of those servers list: a URI that one server in scope
// lists is given under its plain URI, whatever servers out of scope list,
// and ReadResource under the same scope reads it from that server. So a
// caller of the scope learns nothing of the others. A nil in is every
// server.
func (h *Hub) ResourcesIn(in func(server string) bool) []Resource {
	return namespaced(offeredIn(h, in, func(f *features) []Resource { return f.resources }),
		func(r *Resource) *string { return &r.URI }, func(r Resource) string { return r.Server })
}

// ResourceTemplates returns the resource templates of every server whose
// tools are offered, like Resources.
func (h *Hub) ResourceTemplates() []ResourceTemplate { return h.ResourceTemplatesIn(everyServer) }

// ResourceTemplatesIn returns the resource templates of the servers in,
// like ResourcesIn.
func (h *Hub) ResourceTemplatesIn(in func(server string) bool) []ResourceTemplate {
	return namespaced(offeredIn(h, in, func(f *features) []ResourceTemplate { return f.templates }),
		func(t *ResourceTemplate) *string { return &t.URITemplate }, func(t ResourceTemplate) string { return t.Server })
}

// Prompts returns the prompts of every server whose tools are offered,
// like Resources, sorted by qualified name.
func (h *Hub) Prompts() []Prompt {
	out := offered(h, func(f *features) []Prompt { return f.prompts })
	slices.SortFunc(out, func(a, b Prompt) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// ReadResource reads the resource uri from the server that offers it (see
// resources.go for how URIs route: never to a server that did not list,
// link or template it, and never a guess between two) and returns the
// server's ReadResourceResult as JSON (contents with their text or base64
// blob, _meta). A lazy server is started first. The error wraps
// ErrUnknownResource, ErrAmbiguousResource, ErrServerUnavailable,
// ErrClosed, ctx's error, or an *RPCError with the server's JSON-RPC error
// (such as a resource it does not have), and names the server.
func (h *Hub) ReadResource(ctx context.Context, uri string) (json.RawMessage, error) {
	h.mu.Lock()
	s, uri, err := h.resourceServer(uri, inScope(ctx)) // resources.go
	h.mu.Unlock()
	if err != nil {
		return nil, err
	}
	params := &mcp.ReadResourceParams{URI: uri}
	raw, err := h.request(ctx, s, "read resource "+uri, uri, params, func(ctx context.Context, cs *mcp.ClientSession) (any, error) {
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
func (h *Hub) GetPrompt(ctx context.Context, name string, args map[string]string) (json.RawMessage, error) {
	in := inScope(ctx)
	h.mu.Lock()
	var s *server
	var orig string
	for _, n := range h.order {
		srv := h.servers[n]
		if !srv.offersTools() || !in(srv.name) {
			continue
		}
		if i := slices.IndexFunc(srv.feat.prompts, func(p Prompt) bool { return p.Name == name }); i >= 0 {
			s, orig = srv, srv.feat.prompts[i].OriginalName
			break
		}
	}
	h.mu.Unlock()
	if s == nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknownPrompt, name)
	}
	params := &mcp.GetPromptParams{Name: orig, Arguments: args}
	raw, err := h.request(ctx, s, "get prompt "+name, name, params, func(ctx context.Context, cs *mcp.ClientSession) (any, error) {
		if _, err := passRound(ctx, cs, params); err != nil {
			return nil, err
		}
		return cs.GetPrompt(ctx, params)
	})
	return raw, h.redact.Err(err)
}

// request makes a request other than tools/call to s: it starts s when it
// is lazy, keeps it from going idle meanwhile, registers the request (see
// begin), ends it when the Hub closes, and returns the result as JSON.
func (h *Hub) request(ctx context.Context, s *server, op, name string, params progressParams, do func(context.Context, *mcp.ClientSession) (any, error)) (json.RawMessage, error) {
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
			return nil, fmt.Errorf("%w: %s: server %s is %s: %w", ErrServerUnavailable, op, s.name, state, why)
		}
		return nil, fmt.Errorf("%w: %s: server %s is %s", ErrServerUnavailable, op, s.name, state)
	}
	if s.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.Timeout)
		defer cancel()
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer context.AfterFunc(h.life, func() { cancel(ErrClosed) })()
	ctx, end := h.begin(ctx, s, name, params)
	defer end()
	ctx, status := withHTTPStatus(ctx)
	res, err := do(ctx, cs)
	if err != nil {
		return nil, h.requestErr(ctx, s, op, status, err)
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
func (h *Hub) requestErr(ctx context.Context, s *server, op string, status *httpStatus, err error) error {
	var rpcErr *jsonrpc.Error
	switch {
	case h.life.Err() != nil:
		return fmt.Errorf("%s (server %s): %w", op, s.name, ErrClosed)
	case ctx.Err() != nil:
		return fmt.Errorf("%s (server %s): %w", op, s.name, context.Cause(ctx))
	case errors.As(err, &rpcErr) && rpcErr.Code != codeRejected: // (not the transport's own)
		return fmt.Errorf("%s (server %s): %w", op, s.name, status.explain(op, &RPCError{Code: rpcErr.Code, Message: rpcErr.Message, Data: rpcErr.Data}))
	}
	return fmt.Errorf("%w: %s (server %s): %w", ErrServerUnavailable, op, s.name, status.explain(op, err))
}

// rawResultOf returns res as the JSON a proxy forwards: as the server sent
// it, as far as the SDK decodes it (every field MCP defines), with
// "content" an array even when the server left it out.
func rawResultOf(res *mcp.CallToolResult) json.RawMessage {
	if res.Content == nil {
		cp := *res
		cp.Content = []mcp.Content{}
		res = &cp
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil
	}
	return b
}

func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// offered joins what pick takes of the features of every server whose
// tools are offered, in the Hub's server order.
func offered[T any](h *Hub, pick func(*features) []T) []T {
	return offeredIn(h, everyServer, pick)
}

// offeredIn is offered of the servers in scope in (nil: every server).
func offeredIn[T any](h *Hub, in func(string) bool, pick func(*features) []T) []T {
	if in == nil {
		in = everyServer
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []T
	for _, name := range h.order {
		if s := h.servers[name]; s.offersTools() && in(s.name) {
			out = append(out, pick(&s.feat)...)
		}
	}
	return out
}

// toolsSaid tells HubOptions.OnListChange that s's tools were listed again
// on its word (ListChange.Tools). It must be called from s's supervisor,
// after the re-list's change was applied.
func (h *Hub) toolsSaid(s *server) {
	if h.opts.OnListChange == nil {
		return
	}
	h.pt.listMu.Lock()
	h.opts.OnListChange(ListChange{Server: s.name, Tools: true})
	h.pt.listMu.Unlock()
}

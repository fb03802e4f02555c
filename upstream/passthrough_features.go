package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"
)

// ListChange says that a server's resources (and resource templates) or
// prompts changed: it sent notifications/resources/list_changed or
// notifications/prompts/list_changed, or it (re)connected with other
// lists; or that it said its tools changed. What changed in its tools is
// told to the change sink (see Hub.Connect).
type ListChange struct {
	Server             string
	Resources, Prompts bool
	// Tools: the server sent notifications/tools/list_changed (or Refresh
	// asked, as if it had), and its tools were listed again, whether or not
	// they differ: a difference reached the change sink first. A
	// program that announces list changes to clients of its own can pass
	// the server's word on: a spurious announcement costs a client one
	// list, a missed one leaves it with a stale list (a server that
	// registers a tool again, with the same definition, says its list
	// changed, and a client of that server would hear it).
	Tools bool
	// ToolsDiffered, with Tools: the new list differs from the one
	// before (the difference reached the change sink first). Without it
	// the server's word is all there is to pass on; with it, a program
	// that announces the difference itself need not announce the word
	// again.
	ToolsDiffered bool
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
func (s *server) listFeatures(cs *mcp.ClientSession, k featKind) bool {
	h := s.h
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

func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// toolsSaid tells HubOptions.OnListChange that s's tools were listed again
// on its word (ListChange.Tools), and whether they differed. It must be
// called from s's supervisor, after the re-list's change was applied.
func (s *server) toolsSaid(differed bool) {
	h := s.h
	if h.opts.OnListChange == nil {
		return
	}
	h.pt.listMu.Lock()
	h.opts.OnListChange(ListChange{Server: s.name, Tools: true, ToolsDiffered: differed})
	h.pt.listMu.Unlock()
}

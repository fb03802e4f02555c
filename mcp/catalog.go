package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift/tool"
)

// updateTools replaces a ready server's tools and returns what changed, for
// apply.
func (h *Hub) updateTools(s *server, list []*sdk.Tool) tool.Change {
	tools := map[string]tool.Tool{}
	originals := map[string]string{}
	disabled := map[string]string{}
	var warnings []string
	seen := map[string]bool{}

	h.mu.Lock()
	defer h.mu.Unlock()
	if s.state != StateReady {
		return tool.Change{Server: s.name}
	}
	for _, t := range list {
		if t == nil || seen[t.Name] {
			if t != nil {
				warnings = append(warnings, fmt.Sprintf("tool %q listed twice; kept the first", t.Name))
			}
			continue
		}
		seen[t.Name] = true
		q := QualifiedName(s.name, t.Name)
		if owner, ok := h.routes[q]; ok && owner != s {
			warnings = append(warnings, fmt.Sprintf("tool %q: qualified name %q is taken by server %s; dropped", t.Name, q, owner.name))
			continue
		}
		if !s.cfg.toolAllowed(t.Name) {
			disabled[q] = t.Name
			continue
		}
		tools[q] = convertTool(s.name, q, t)
		originals[q] = t.Name
	}

	var ch tool.Change
	ch.Server = s.name
	for _, q := range slices.Sorted(maps.Keys(tools)) {
		old, ok := s.tools[q]
		switch {
		case !ok:
			ch.Added = append(ch.Added, tools[q])
		case !sameTool(old, tools[q]):
			ch.Changed = append(ch.Changed, tools[q])
		}
	}
	for _, q := range slices.Sorted(maps.Keys(s.tools)) {
		if _, ok := tools[q]; !ok {
			ch.Removed = append(ch.Removed, q)
		}
	}
	for q, owner := range h.routes {
		if owner == s {
			delete(h.routes, q)
		}
	}
	for q := range tools {
		h.routes[q] = s
	}
	for q := range disabled {
		h.routes[q] = s
	}
	s.tools, s.originals, s.disabled, s.warnings = tools, originals, disabled, warnings
	return ch
}

// apply hands a change to OnChange, one call at a time, and records its
// error in the server's status. It must be called from s's supervisor, so
// that a server's changes arrive in order, and without h.mu held.
func (h *Hub) apply(s *server, ch tool.Change) {
	if h.opts.OnChange == nil || ch.Empty() {
		return
	}
	h.changeMu.Lock()
	err := h.opts.OnChange(h.life, ch)
	h.changeMu.Unlock()
	if err != nil {
		h.opts.Logger.Warn("mcp: applying a tool change failed", "server", s.name, "error", err)
	}
	h.mu.Lock()
	s.applyErr = err
	h.mu.Unlock()
}

func sameTool(a, b tool.Tool) bool {
	if a.Hash != b.Hash || a.Title != b.Title {
		return false
	}
	ja, _ := json.Marshal(a.Annotations)
	jb, _ := json.Marshal(b.Annotations)
	return bytes.Equal(ja, jb)
}

// convertTool turns an SDK tool into ours at the package boundary.
func convertTool(server, qualified string, t *sdk.Tool) tool.Tool {
	schema := json.RawMessage(`{"type":"object"}`)
	if t.InputSchema != nil {
		if b, err := json.Marshal(t.InputSchema); err == nil && !bytes.Equal(b, []byte("null")) {
			schema = b
		}
	}
	out := tool.Tool{
		Name:         qualified,
		Server:       server,
		OriginalName: t.Name,
		Title:        t.Title,
		Description:  t.Description,
		InputSchema:  schema,
	}
	if a := t.Annotations; a != nil {
		if out.Title == "" {
			out.Title = a.Title
		}
		// The SDK decodes the two non-pointer hints as false when absent,
		// so only a true value says anything.
		var ann tool.Annotations
		if a.ReadOnlyHint {
			ann.ReadOnlyHint = new(true)
		}
		if a.IdempotentHint {
			ann.IdempotentHint = new(true)
		}
		ann.DestructiveHint = a.DestructiveHint
		ann.OpenWorldHint = a.OpenWorldHint
		if ann != (tool.Annotations{}) {
			out.Annotations = &ann
		}
	}
	return out.WithHash()
}

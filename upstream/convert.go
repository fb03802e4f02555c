package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/tool"
)

// toolAllowed applies AllowedTools and DisabledTools to a tool's original
// name.
func toolAllowed(sc config.Server, name string) bool {
	match := func(patterns []string) bool {
		for _, p := range patterns {
			if ok, _ := path.Match(p, name); ok || p == name {
				return true
			}
		}
		return false
	}
	if len(sc.AllowedTools) > 0 && !match(sc.AllowedTools) {
		return false
	}
	return !match(sc.DisabledTools)
}

// convertTool turns an SDK tool into ours at the package boundary. A tool
// whose input schema the model APIs would reject is repaired when its
// meaning is clear (an object schema without "type", or true, becomes
// "type":"object"), and dropped otherwise (a number, a string, an array,
// a schema of another type): one bad tool must not break every request it
// is retrieved into. warn says what was done; ok is false when dropped.
func convertTool(server, qualified string, t *mcp.Tool) (_ tool.Tool, warn string, ok bool) {
	schema, warn, ok := objectSchema(t.InputSchema)
	if !ok {
		return tool.Tool{}, fmt.Sprintf("tool %q: input schema %s; dropped", t.Name, warn), false
	}
	if warn != "" {
		warn = fmt.Sprintf("tool %q: input schema %s", t.Name, warn)
	}
	out := tool.Tool{
		Name:         qualified,
		Server:       server,
		OriginalName: t.Name,
		Title:        t.Title,
		Description:  t.Description,
		InputSchema:  schema,
		OutputSchema: outputSchema(t.OutputSchema),
	}
	if a := t.Annotations; a != nil {
		if out.Title == "" {
			out.Title = a.Title
		}
		// The SDK decodes the two non-pointer hints as false when absent,
		// so only a true value says anything.
		ann := tool.Annotations{Title: a.Title}
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
	return out.WithHash(), warn, true
}

// objectSchema returns v, an input schema as the SDK decoded it, as JSON
// with a root of type object. why says what is wrong with it: a repair
// when ok, the reason it cannot be used when not.
func objectSchema(v any) (schema json.RawMessage, why string, ok bool) {
	if v == nil {
		return json.RawMessage(`{"type":"object"}`), "", true
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Sprintf("cannot be encoded (%v)", err), false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Sprintf("is not JSON (%v)", err), false
	}
	switch r := root.(type) {
	case nil:
		return json.RawMessage(`{"type":"object"}`), "", true
	case bool:
		if r {
			return json.RawMessage(`{"type":"object"}`), "is true; sent as {\"type\":\"object\"}", true
		}
		return nil, "is false: no arguments are valid", false
	case map[string]any:
		typ, has := r["type"]
		switch {
		case !has:
			r["type"] = "object"
			out, err := json.Marshal(r)
			if err != nil {
				return nil, fmt.Sprintf("cannot be encoded (%v)", err), false
			}
			return out, "has no \"type\"; treated as \"type\":\"object\"", true
		case typ == "object":
			return b, "", true
		default:
			t, _ := json.Marshal(typ)
			return nil, fmt.Sprintf("has type %s, not \"object\"", t), false
		}
	default:
		return nil, fmt.Sprintf("is %s, not an object schema", truncate(string(b), 40)), false
	}
}

// truncate cuts s to at most n bytes, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// outputSchema returns a tool's output schema as JSON, or nil when it has
// none or it cannot be encoded (it is the server's to validate, not ours).
func outputSchema(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil || string(b) == "null" {
		return nil
	}
	return b
}

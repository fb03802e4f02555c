package gateway

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/toolsift/toolsift/internal/termsafe"
)

// Text from upstream servers that the proxy shows its clients as text
// (tool, resource and prompt titles and descriptions, the descriptions and
// titles inside input and output schemas, progress messages, error
// messages) goes through one rule, internal/termsafe's: control characters
// but newline and tab, C1 controls, bidirectional overrides and invalid
// UTF-8 are escaped (ESC becomes the four characters \x1b, U+202E the six
// characters \u202e). Escaped rather than stripped: a client that shows
// the text (a terminal client, a tool list in a UI, a model reading the
// description) cannot be driven by it, and whoever reviews it sees that
// the server sent control characters instead of a clean-looking text.
// Tool results are data and pass through as the server sent them.

// text is s made safe for a client.
func text(s string) string { return termsafe.String(s) }

// schemaText returns schema with its "description" and "title" strings
// made safe, at any depth. Other strings (enum values, patterns, defaults)
// are the tool's contract and stay as they are. A schema with nothing to
// escape is returned as is, without decoding it.
func schemaText(schema json.RawMessage) json.RawMessage {
	if !mayNeedEscape(schema) {
		return schema
	}
	var v any
	if err := json.Unmarshal(schema, &v); err != nil {
		return schema
	}
	if !escapeDocs(v) {
		return schema
	}
	out, err := json.Marshal(v)
	if err != nil {
		return schema
	}
	return out
}

// mayNeedEscape reports whether JSON text may hold a character termsafe
// escapes: a \u escape, a non-ASCII byte, or a raw control byte.
func mayNeedEscape(b []byte) bool {
	if bytes.Contains(b, []byte(`\u`)) || !utf8.Valid(b) {
		return true
	}
	for _, c := range b {
		if c >= 0x80 || c < 0x20 && c != '\n' && c != '\t' && c != '\r' {
			return true
		}
	}
	return false
}

// escapeDocs escapes the description and title strings of v in place and
// reports whether any changed.
func escapeDocs(v any) bool {
	changed := false
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && (k == "description" || k == "title") {
				if e := text(s); e != s {
					v[k] = e
					changed = true
				}
				continue
			}
			if escapeDocs(x) {
				changed = true
			}
		}
	case []any:
		for _, x := range v {
			if escapeDocs(x) {
				changed = true
			}
		}
	}
	return changed
}

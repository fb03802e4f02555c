package gateway

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift/tool"
)

// An upstream result passes through as the bytes the Hub kept of it
// (tool.Result.Raw): its content blocks are not decoded into Go strings
// and encoded again, which cost two copies of a large result and the
// escaping of every string in it. Only the result's top level is decoded.

// rawResult is the top level of a CallToolResult, its content blocks and
// structuredContent left as JSON.
type rawResult struct {
	Content           []json.RawMessage `json:"content"`
	StructuredContent json.RawMessage   `json:"structuredContent,omitempty"`
	IsError           bool              `json:"isError,omitempty"`
	Meta              map[string]any    `json:"_meta,omitempty"`
}

// rawContent is a content block as the server sent it. It is an
// mcp.Content for the SDK's encoder only (it embeds the interface for its
// unexported method, which the SDK calls when it decodes, never when it
// encodes a server's result).
type rawContent struct {
	mcp.Content
	raw json.RawMessage
}

func (c rawContent) MarshalJSON() ([]byte, error) { return c.raw, nil }

// result is an upstream call's result as the proxy returns it: as the
// server sent it (content blocks of every kind, structuredContent, _meta),
// or, from a source that has no raw result, as rendered text.
func result(res tool.Result) *mcp.CallToolResult {
	if r := inputRequired(res.Raw); r != nil { // roundtrip.go
		return r
	}
	if len(res.Raw) > 0 {
		var r rawResult
		if err := json.Unmarshal(res.Raw, &r); err == nil {
			out := &mcp.CallToolResult{Content: make([]mcp.Content, len(r.Content)), IsError: r.IsError, Meta: r.Meta}
			for i, c := range r.Content {
				out.Content[i] = rawContent{raw: c}
			}
			if len(r.StructuredContent) > 0 && string(r.StructuredContent) != "null" {
				out.StructuredContent = r.StructuredContent
			}
			return out
		}
	}
	out := &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: res.Content}},
		IsError: res.IsError,
	}
	if len(res.Structured) > 0 {
		out.StructuredContent = res.Structured
	}
	return out
}

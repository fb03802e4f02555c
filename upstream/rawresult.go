package upstream

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"
)

// resultJSON is res as JSON (tool.Result.Raw, what a proxy forwards), as
// json.Marshal writes it but for the text blocks: their text is escaped
// straight into one buffer sized for the result (segmentio's AppendEscape,
// the JSON package the go-sdk itself decodes with). json.Marshal of a large
// text block allocated about 14 times its size (the block's own encoding,
// grown by doubling, then copied and compacted into the result's), which
// made a 15 MiB result cost over 200 MB in the Hub alone. Other blocks,
// structuredContent and _meta are marshalled by the SDK's rules; a result
// of the multi round-trip protocol (input requests) falls back to
// json.Marshal.
func resultJSON(res *mcp.CallToolResult) json.RawMessage {
	if res.InputRequests != nil || res.RequestState != "" || res.NeedsInput() {
		return rawResultOf(res)
	}
	size := 64
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			size += len(t.Text) + len(t.Text)/16 + 32
		}
	}
	buf := make([]byte, 0, size)
	buf = append(buf, `{"content":[`...)
	for i, c := range res.Content {
		if i > 0 {
			buf = append(buf, ',')
		}
		if t, ok := c.(*mcp.TextContent); ok && t.Meta == nil && t.Annotations == nil {
			buf = append(buf, `{"type":"text","text":`...)
			buf = segjson.AppendEscape(buf, t.Text, 0) // as encoding/json, but no HTML escapes (JSON needs none)
			buf = append(buf, '}')
			continue
		}
		b, err := json.Marshal(c)
		if err != nil {
			return rawResultOf(res)
		}
		buf = append(buf, b...)
	}
	buf = append(buf, ']')
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return rawResultOf(res)
		}
		buf = append(buf, `,"structuredContent":`...)
		buf = append(buf, b...)
	}
	if res.IsError {
		buf = append(buf, `,"isError":true`...)
	}
	if len(res.Meta) > 0 {
		b, err := json.Marshal(res.Meta)
		if err != nil {
			return rawResultOf(res)
		}
		buf = append(buf, `,"_meta":`...)
		buf = append(buf, b...)
	}
	return append(buf, '}')
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

package mcp

import (
	"encoding/json"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// resultJSON is res as JSON (tool.Result.Raw, what a proxy forwards), as
// json.Marshal writes it but for the text blocks: their text is escaped
// straight into one buffer sized for the result. json.Marshal of a large
// text block allocated about 14 times its size (the block's own encoding,
// grown by doubling, then copied and compacted into the result's), which
// made a 15 MiB result cost over 200 MB in the Hub alone. Other blocks,
// structuredContent and _meta are marshalled by the SDK's rules; a result
// of the multi round-trip protocol (input requests) falls back to
// json.Marshal.
func resultJSON(res *sdk.CallToolResult) json.RawMessage {
	if res.InputRequests != nil || res.RequestState != "" || res.NeedsInput() {
		return rawResultOf(res)
	}
	size := 64
	for _, c := range res.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			size += len(t.Text) + len(t.Text)/16 + 32
		}
	}
	buf := make([]byte, 0, size)
	buf = append(buf, `{"content":[`...)
	for i, c := range res.Content {
		if i > 0 {
			buf = append(buf, ',')
		}
		if t, ok := c.(*sdk.TextContent); ok && t.Meta == nil && t.Annotations == nil {
			buf = append(buf, `{"type":"text","text":`...)
			buf = appendJSONString(buf, t.Text)
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

// appendJSONString appends s as a JSON string, escaped as encoding/json
// escapes it but for HTML characters, which JSON does not need escaped:
// quote, backslash and control characters, invalid UTF-8 as U+FFFD, and
// U+2028 and U+2029.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

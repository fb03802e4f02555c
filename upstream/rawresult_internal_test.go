package upstream

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestResultJSON: resultJSON writes the same JSON value as json.Marshal
// for every kind of result, with text that needs every escape.
func TestResultJSON(t *testing.T) {
	texts := []string{"", "plain", `quote " backslash \ slash /`, "ctl \x00\x01\x1b[2J\x07\x7f\n\r\t", "html <b>&amp;</b>",
		"bad utf-8 \xff\xfe \xc3", "line sep \u2028 para \u2029 rlo \u202e", "emoji 🦫 é", strings.Repeat("x", 70000) + "\""}
	var results []*mcp.CallToolResult
	for _, s := range texts {
		results = append(results, &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}})
	}
	results = append(results,
		&mcp.CallToolResult{},
		&mcp.CallToolResult{Content: []mcp.Content{}, IsError: true},
		&mcp.CallToolResult{
			Meta: mcp.Meta{"k": "v"},
			Content: []mcp.Content{
				&mcp.TextContent{Text: "a"},
				&mcp.TextContent{Text: "annotated", Annotations: &mcp.Annotations{Priority: 0.5}},
				&mcp.ImageContent{Data: []byte("aGk="), MIMEType: "image/png"},
				&mcp.ResourceLink{URI: "file:///x", Name: "x"},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///y", Text: "y\x1b"}},
			},
			StructuredContent: map[string]any{"n": 1, "s": "<\u2028>"},
			IsError:           true,
		})
	for i, res := range results {
		got, want := decode(t, resultJSON(res)), decode(t, rawResultOf(res))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("result %d: resultJSON differs from json.Marshal (-want +got):\n%s", i, diff)
		}
	}
}

func decode(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return v
}

// FuzzResultJSON: any text is written as json.Marshal writes it.
func FuzzResultJSON(f *testing.F) {
	for _, s := range []string{"", "a\"b", "\xff\u2028\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
		var got, want any
		if err := json.Unmarshal(resultJSON(res), &got); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		_ = json.Unmarshal(rawResultOf(res), &want)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%q (-want +got):\n%s", s, diff)
		}
	})
}

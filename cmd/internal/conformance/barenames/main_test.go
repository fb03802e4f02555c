package main

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestRequestQualifiesNames(t *testing.T) {
	m := &mapper{prefix: "everything__"}
	for _, tc := range []struct{ in, want string }{
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"test_simple_text","arguments":{}}}`,
			`{"id":7,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{},"name":"everything__test_simple_text"}}`},
		{`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"p"}}`,
			`{"id":1,"jsonrpc":"2.0","method":"prompts/get","params":{"name":"everything__p"}}`},
		{`{"jsonrpc":"2.0","id":2,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"a","value":"v"}}}`,
			`{"id":2,"jsonrpc":"2.0","method":"completion/complete","params":{"argument":{"name":"a","value":"v"},"ref":{"name":"everything__p","type":"ref/prompt"}}}`},
		// Unchanged, byte for byte: toolsift's own tools, names already
		// qualified, resource references, other methods, non-JSON.
		{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search_tools"}}`, ""},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"a__b"}}`, ""},
		{`{"jsonrpc":"2.0","id":4,"method":"completion/complete","params":{"ref":{"type":"ref/resource","uri":"test://x/{id}"}}}`, ""},
		{`{"jsonrpc":"2.0","id":5,"method":"tools/list"}`, ""},
		{`not json`, ""},
	} {
		want := tc.want
		if want == "" {
			want = tc.in
		}
		if got := string(m.request([]byte(tc.in))); got != want {
			t.Errorf("request(%s)\n = %s\nwant %s", tc.in, got, want)
		}
	}
	// A large id keeps its digits.
	if got := string(m.request([]byte(`{"id":12345678901234567890,"method":"tools/call","params":{"name":"x"}}`))); !strings.Contains(got, `"id":12345678901234567890`) {
		t.Errorf("id changed: %s", got)
	}
}

func TestResponseUnqualifiesNames(t *testing.T) {
	m := &mapper{prefix: "everything__"}
	list := `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"everything__a"},{"name":"search_tools"}]}}`
	want := `{"id":1,"jsonrpc":"2.0","result":{"tools":[{"name":"a"},{"name":"search_tools"}]}}`
	for _, tc := range []struct{ ct, in, want string }{
		{"application/json", list, want},
		{"text/event-stream", "id: 1\nevent: message\ndata: " + list + "\n\n", "id: 1\nevent: message\ndata: " + want + "\n\n"},
		{"application/json", `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"everything__a"}]}}`,
			`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"everything__a"}]}}`},
	} {
		resp := &http.Response{Header: http.Header{"Content-Type": {tc.ct}}, Body: io.NopCloser(strings.NewReader(tc.in))}
		if err := m.response(resp); err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, []byte(tc.want)) {
			t.Errorf("%s response %q\n = %q\nwant %q", tc.ct, tc.in, got, tc.want)
		}
	}
}

func TestHeaderQualifiesMcpName(t *testing.T) {
	m := &mapper{prefix: "everything__"}
	for _, tc := range []struct{ method, name, want string }{
		{"tools/call", "test_simple_text", "everything__test_simple_text"},
		{"prompts/get", "p", "everything__p"},
		{"tools/call", "other", "everything__other"}, // a mismatch with the body stays one
		{"tools/call", "search_tools", "search_tools"},
		{"resources/read", "test://x", "test://x"},
		{"tools/call", "", ""},
	} {
		h := http.Header{"Mcp-Method": {tc.method}}
		if tc.name != "" {
			h.Set("Mcp-Name", tc.name)
		}
		m.header(h)
		if got := h.Get("Mcp-Name"); got != tc.want {
			t.Errorf("%s Mcp-Name %q = %q, want %q", tc.method, tc.name, got, tc.want)
		}
	}
}

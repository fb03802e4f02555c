package gateway_test

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/gateway"
)

// TestUnknownToolHint: a session that calls a tool by a name not on its
// list (one another session found, or a guess) is told how to reach it:
// call_tool, or search_tools.
func TestUnknownToolHint(t *testing.T) {
	ts, hub := openToolset(t, localTools(t))
	p, err := gateway.NewProxy(ts, hub, nil)
	if err != nil {
		t.Fatal(err)
	}
	finder := connect(t, p.NewServer(), "")
	if ans := finder.search(t, "add two numbers", 1); len(ans.Tools) == 0 || ans.Tools[0].Name != "math__add" {
		t.Fatalf("search found %+v, want math__add first", ans.Tools)
	}
	if text, isErr := finder.call(t, "math__add", map[string]any{"a": 1, "b": 2}); isErr || text != "3" {
		t.Fatalf("the session that searched: math__add = %q (isError %v), want 3", text, isErr)
	}

	other := connect(t, p.NewServer(), "")
	for _, tt := range []struct {
		name string
		want []string
	}{
		{"math__add", []string{`unknown tool "math__add"`, "not on this session's tool list", `call_tool with {"name": "math__add"`, "search_tools"}},
		{"math__sqrt", []string{`unknown tool "math__sqrt"`, "no tool has this name", "search_tools finds tools"}},
	} {
		_, err := other.CallTool(context.Background(), &mcp.CallToolParams{Name: tt.name, Arguments: map[string]any{}})
		for _, w := range tt.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("a new session calling %s: error %v, want it to say %q", tt.name, err, w)
			}
		}
	}
}

package toolsift_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolsift/toolsift/budget"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
)

// TestSelect: a tool the conversation called stays offered (sticky), what
// the latest search_tools call finds joins (found), a search with bad
// arguments is skipped, and the JSON of each shape holds every tool.
func TestSelect(t *testing.T) {
	ts := selector()
	defer ts.Close()
	conv := []tool.Message{
		{Role: "user", Content: "Read notes.txt, then mail it to bob."},
		{Role: "assistant", ToolCalls: []tool.ToolCall{{ID: "1", Name: "read_file", Arguments: `{"path":"notes.txt"}`}}},
		{Role: "tool", ToolCallID: "1", Content: "buy milk"},
		{Role: "assistant", Content: "Now the mail.", ToolCalls: []tool.ToolCall{
			{ID: "2", Name: "search_tools", Arguments: `{"query":"send an email","k":1}`},
			{ID: "3", Name: "search_tools", Arguments: `{"k":"many"}`},
		}},
		{Role: "tool", ToolCallID: "2", Content: "send_email"},
		{Role: "tool", ToolCallID: "3", Content: "error: bad arguments"},
	}
	sel, err := ts.Select(context.Background(), conv)
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{}
	for _, tl := range sel.Tools {
		reasons[tl.Name] = tl.Reason
	}
	if reasons["read_file"] != think.ReasonSticky || reasons["send_email"] != think.ReasonFound {
		t.Errorf("reasons %v: want read_file sticky and send_email found", reasons)
	}
	if sel.Tokens <= 0 || sel.AllTools != 5 || sel.AllTokens <= sel.Tokens {
		t.Errorf("tokens %d of %d (%d tools)", sel.Tokens, sel.AllTokens, sel.AllTools)
	}
	names := sel.Names()
	if names[len(names)-1] != "search_tools" {
		t.Errorf("names %v: want search_tools last (tools were left out)", names)
	}
	for _, f := range []budget.Format{budget.FormatChat, budget.FormatResponses, budget.FormatAnthropic, budget.FormatMCP} {
		var tools []map[string]any
		if err := json.Unmarshal(sel.JSON(f), &tools); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var got []string
		for _, tl := range tools {
			name, _ := tl["name"].(string)
			if fn, ok := tl["function"].(map[string]any); ok {
				name, _ = fn["name"].(string)
			}
			got = append(got, name)
		}
		if diff := cmp.Diff(names, got); diff != "" {
			t.Errorf("%s: names (-want +got):\n%s", f, diff)
		}
	}
}

package tool_test

import (
	"encoding/json"
	"testing"

	"github.com/toolsift/toolsift/tool"
)

// TestSame: a schema whose keys come in another order is the same tool
// (the Hub compares a cached list with the live one); a changed
// description, schema, title or annotation is not.
func TestSame(t *testing.T) {
	base := tool.Tool{Name: "s__a", Server: "s", OriginalName: "a", Description: "Add.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"number"}}}`)}.WithHash()
	reordered := base
	reordered.InputSchema = json.RawMessage(`{"properties":{"x":{"type":"number"}},"type":"object"}`)
	reordered = reordered.WithHash()
	if !tool.Same(base, reordered) {
		t.Errorf("keys in another order: not Same")
	}
	readOnly := true
	for name, change := range map[string]func(*tool.Tool){
		"description": func(t *tool.Tool) { t.Description = "Add two numbers." },
		"schema":      func(t *tool.Tool) { t.InputSchema = json.RawMessage(`{"type":"object"}`) },
		"title":       func(t *tool.Tool) { t.Title = "Adder" },
		"annotations": func(t *tool.Tool) { t.Annotations = &tool.Annotations{ReadOnlyHint: &readOnly} },
	} {
		other := base
		change(&other)
		other = other.WithHash()
		if tool.Same(base, other) {
			t.Errorf("%s changed: still Same", name)
		}
	}
}

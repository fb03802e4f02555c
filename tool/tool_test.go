package tool_test

import (
	"encoding/json"
	"testing"

	"github.com/toolsift/toolsift/tool"
)

func TestContentHash(t *testing.T) {
	base := tool.Tool{
		Name:        "wx__get_weather",
		Description: "Current weather for a city.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
	}
	h := tool.ContentHash(base)
	if len(h) != 64 {
		t.Fatalf("hash %q is not hex sha256", h)
	}

	same := base
	same.InputSchema = json.RawMessage("{\n \"required\": [\"city\"], \"properties\": {\"city\": {\"type\": \"string\"}}, \"type\": \"object\"}")
	same.Title = "Weather"
	same.Server = "other"
	same.Annotations = &tool.Annotations{}
	if got := tool.ContentHash(same); got != h {
		t.Errorf("reordered schema, title, server and annotations changed the hash")
	}

	for name, mutate := range map[string]func(*tool.Tool){
		"name":        func(t *tool.Tool) { t.Name = "wx__get_forecast" },
		"description": func(t *tool.Tool) { t.Description += " More." },
		"schema":      func(t *tool.Tool) { t.InputSchema = json.RawMessage(`{"type":"object"}`) },
		"no schema":   func(t *tool.Tool) { t.InputSchema = nil },
		// The separator keeps name/description boundaries apart.
		"boundary": func(t *tool.Tool) {
			t.Name, t.Description = t.Name+"C", t.Description[1:]
		},
	} {
		changed := base
		mutate(&changed)
		if tool.ContentHash(changed) == h {
			t.Errorf("changing the %s did not change the hash", name)
		}
	}

	if got := base.WithHash().Hash; got != h {
		t.Errorf("WithHash().Hash = %q, want %q", got, h)
	}
	// Invalid JSON still hashes, deterministically.
	bad := base
	bad.InputSchema = json.RawMessage(`{"type":`)
	if h1, h2 := tool.ContentHash(bad), tool.ContentHash(bad); h1 != h2 || h1 == h {
		t.Errorf("invalid schema hash is unstable or collides")
	}
}

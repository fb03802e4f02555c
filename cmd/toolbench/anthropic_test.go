package main

import (
	"context"
	"errors"
	"testing"

	"github.com/toolsift/toolsift/agent"
	"github.com/toolsift/toolsift/internal/anthropictest"
	"github.com/toolsift/toolsift/tool"
)

// TestAnthropicModel: --api anthropic's model reads its endpoint from the
// command's environment (or --base-url), says how to configure it when
// nothing is set, and reaches the Messages API.
func TestAnthropicModel(t *testing.T) {
	srv := anthropictest.NewServer(anthropictest.Reply{Content: "hi"}, anthropictest.Reply{Content: "hi"})
	defer srv.Close()
	getenv := func(vars map[string]string) func(string) string {
		return func(k string) string { return vars[k] }
	}
	if _, _, err := newAnthropicModel(&env{getenv: getenv(nil)}, "claude-test", "", false); !errors.Is(err, errNoAnthropicKey) {
		t.Errorf("no endpoint: %v, want errNoAnthropicKey", err)
	}
	for _, e := range []*env{
		{getenv: getenv(map[string]string{"ANTHROPIC_BASE_URL": srv.URL})},
		{getenv: getenv(map[string]string{"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": "http://127.0.0.1:1"})},
	} {
		base := ""
		if e.getenv("ANTHROPIC_API_KEY") != "" {
			base = srv.URL // --base-url wins over the environment
		}
		m, at, err := newAnthropicModel(e, "claude-test", base, true)
		if err != nil {
			t.Fatal(err)
		}
		if at != srv.URL {
			t.Errorf("base URL %q, want %q", at, srv.URL)
		}
		resp, err := m.Complete(context.Background(), agent.Request{Messages: []tool.Message{{Role: tool.RoleUser, Content: "hello"}}})
		if err != nil || resp.Message.Content != "hi" {
			t.Errorf("Complete = %+v, %v", resp, err)
		}
	}
	if n := len(srv.Requests()); n != 2 || !srv.Requests()[0].Stream {
		t.Errorf("%d requests; want 2, streamed", n)
	}
}

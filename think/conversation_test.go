package think_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
)

func TestConversationQuery(t *testing.T) {
	tests := []struct {
		name     string
		msgs     []tool.Message
		want     retrieval.Query
		searches []string
	}{
		{name: "empty"},
		{
			name: "task only",
			msgs: []tool.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "book a flight"}},
			want: retrieval.Query{Task: "book a flight"},
		},
		{
			name: "thought, calls and observations after the latest task",
			msgs: []tool.Message{
				{Role: "user", Content: "old task"},
				{Role: "assistant", Content: "done"},
				{Role: "user", Content: "weather in Bern"},
				{Role: "assistant", Content: "Let me look.", ToolCalls: []tool.ToolCall{
					{ID: "1", Name: "get_weather", Arguments: `{"city":"Bern"}`},
					{ID: "2", Name: think.SearchToolName, Arguments: `{"query":"forecast"}`},
				}},
				{Role: "tool", ToolCallID: "1", Content: "12 C"},
				{Role: "tool", ToolCallID: "2", Content: `{"tools":[]}`},
			},
			want: retrieval.Query{
				Task:         "weather in Bern",
				Thought:      "Let me look.\nget_weather {\"city\":\"Bern\"}\nsearch_tools {\"query\":\"forecast\"}",
				Observations: []string{"12 C", `{"tools":[]}`},
			},
			searches: []string{`{"query":"forecast"}`},
		},
		{
			name: "a call without text starts the thought",
			msgs: []tool.Message{
				{Role: "user", Content: "sum"},
				{Role: "assistant", ToolCalls: []tool.ToolCall{{Name: "add", Arguments: `{}`}}},
			},
			want: retrieval.Query{Task: "sum", Thought: "add {}"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, searches := think.ConversationQuery(tt.msgs)
			if diff := cmp.Diff(tt.want, q); diff != "" {
				t.Errorf("query (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.searches, searches); diff != "" {
				t.Errorf("searches (-want +got):\n%s", diff)
			}
		})
	}
}

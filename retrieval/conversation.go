package retrieval

import (
	"fmt"
	"slices"
	"strings"
)

// Message is one entry of a conversation, as plain data: what
// ConversationQuery reads. Only roles, text and tool calls matter. The
// root package's toolsift.Message is this type (the input of
// Toolset.Select); the agent converts its own messages to it.
type Message struct {
	// Role is "system", "user", "assistant" or "tool".
	Role    string `json:"role"`
	Content string `json:"content,omitempty"`
	// ToolCalls are the calls an assistant message asked for.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID links a tool message to the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// ToolCall is one tool call of an assistant Message.
type ToolCall struct {
	ID        string `json:"id,omitempty"`
	Name      string `json:"name"`
	Arguments string `json:"arguments,omitempty"`
}

// ConversationQuery is the one rule that turns a conversation into the
// Query of its next step, for the agent's loop and Toolset.Select alike:
// the latest user message is the task; the latest assistant message after
// it (its text, then each tool call as "name arguments" on a line of its
// own) is the thought; the tool results that follow it, in order, are the
// observations. Used is left for the caller (the tools it knows were
// called). It also returns the arguments of that assistant message's
// search_tools calls, in order.
func ConversationQuery(msgs []Message) (q Query, searches []string) {
	i := len(msgs) - 1
	var obs []string
	for ; i >= 0 && msgs[i].Role == "tool"; i-- {
		obs = append(obs, msgs[i].Content)
	}
	slices.Reverse(obs)
	if i >= 0 && msgs[i].Role == "assistant" {
		q.Observations = obs
		var b strings.Builder
		b.WriteString(msgs[i].Content)
		for _, c := range msgs[i].ToolCalls {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			fmt.Fprintf(&b, "%s %s", c.Name, c.Arguments)
			if c.Name == SearchToolName {
				searches = append(searches, c.Arguments)
			}
		}
		q.Thought = b.String()
	}
	for ; i >= 0; i-- {
		if msgs[i].Role == "user" {
			q.Task = msgs[i].Content
			break
		}
	}
	return q, searches
}

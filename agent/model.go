package agent

import (
	"context"
	"encoding/json"
)

// Model is a chat model that may answer with tool calls. Complete sends the
// whole conversation and the tools offered for this step and returns the
// model's next message.
//
// Implementations must be safe for concurrent use: one Agent may run several
// conversations at once. The Agent never mutates a Request after the call.
type Model interface {
	Complete(ctx context.Context, req Request) (Response, error)
}

// Role is who wrote a Message.
type Role string

// The roles of the Chat Completions API.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one entry of a conversation.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content,omitempty"`
	// ToolCalls are the calls an assistant message asks for.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID links a tool message to the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// ToolCall is one function call requested by the model.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments are the raw arguments as the model wrote them. They are not
	// guaranteed to be JSON: the Agent validates them before calling a tool.
	Arguments string `json:"arguments"`
}

// ToolDef is a tool as offered to the model: a function name, its
// description and the JSON Schema of its arguments (possibly compressed by
// budget.Select).
type ToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// Request is one call to a Model.
type Request struct {
	Messages []Message
	// Tools are offered in this order; the Agent keeps the order stable for
	// the same set so that provider prompt caches hit.
	Tools []ToolDef
	// OnDelta, when set, receives the reply as it streams, piece by piece.
	// A streaming Model calls it from the goroutine running Complete, one
	// call at a time, and never after Complete returns; a Model that does
	// not stream ignores it. The Response is the whole reply either way.
	OnDelta func(Delta)
}

// Delta is a piece of a streamed reply: text, or a piece of the tool call
// at Index of the reply's ToolCalls (ID and Name come with its first piece;
// Arguments are appended in order).
type Delta struct {
	// Text is a piece of the reply's content.
	Text string `json:"text,omitempty"`
	// Tool is true when the piece belongs to a tool call.
	Tool      bool   `json:"tool,omitempty"`
	Index     int    `json:"index,omitempty"`
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
}

// Response is a Model's answer.
type Response struct {
	// Message is the assistant message: content, tool calls or both.
	Message Message
	// FinishReason as reported by the provider ("stop", "tool_calls", ...).
	FinishReason string
	// Usage as reported by the provider; zero when it reported none.
	Usage Usage
	// Model is the model name the provider says answered.
	Model string
}

// Usage is the token usage a provider reports for one completion.
type Usage struct {
	// PromptTokens counts every input token, cached or not.
	PromptTokens int `json:"prompt_tokens"`
	// CachedPromptTokens are the PromptTokens the provider read from its
	// prompt cache (OpenAI prompt_tokens_details.cached_tokens, Anthropic
	// cache_read_input_tokens), billed at the cached-input price.
	CachedPromptTokens int `json:"cached_prompt_tokens,omitempty"`
	// CacheWriteTokens are the PromptTokens the provider wrote to its
	// cache (Anthropic cache_creation_input_tokens), billed at its
	// cache-write price where it has one.
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		PromptTokens:       u.PromptTokens + v.PromptTokens,
		CachedPromptTokens: u.CachedPromptTokens + v.CachedPromptTokens,
		CacheWriteTokens:   u.CacheWriteTokens + v.CacheWriteTokens,
		CompletionTokens:   u.CompletionTokens + v.CompletionTokens,
		TotalTokens:        u.TotalTokens + v.TotalTokens,
	}
}

package agent

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/toolsift/toolsift/tool"
)

// ErrModel wraps every error a Model returns: the provider's own error
// (for OpenAI an *openai.Error with the HTTP status) stays reachable with
// errors.As.
var ErrModel = errors.New("agent: model")

// ErrNoStream is wrapped by a Model's error when it asked its server to
// stream and the server answered without an event stream: one JSON body,
// as a server that does not stream answers every request. The error names
// the option that turns streaming off.
var ErrNoStream = errors.New("agent: the server does not stream")

// Model is a chat model that may answer with tool calls. Complete sends the
// whole conversation and the tools offered for this step and returns the
// model's next message.
//
// Implementations must be safe for concurrent use: one Agent may run several
// conversations at once. The Agent never mutates a Request after the call.
type Model interface {
	Complete(ctx context.Context, req Request) (Response, error)
}

// A DeferringModel is a Model whose API loads tools on demand: the Agent
// sends the catalog in Request.Deferred, the model searches it with the
// API's own tool search executed by the client, and the Agent answers the
// search (a ToolCall with Search set) with toolsift's ranking
// (Tools.SearchTools) and budget (the found tools, best first, whose
// definitions fit the Think step's budget together); the tool message's
// Found names what the search loaded, for the model to render natively. The tools sent, the deferred
// ones and the loaded ones, stay the same for the whole run, so every
// step after the first reuses the provider's prompt cache; tools found
// join the conversation, at its end.
//
// The Agent defers only when DefersTools is true, its Tools can list the
// catalog (a Catalog), the catalog does not fit the step's budget whole,
// and it costs at most Options.MaxDeferredTokens; otherwise it chooses
// tools per step as for any Model.
type DeferringModel interface {
	Model
	// DefersTools reports whether the model sends deferred tools (it may
	// be configured not to).
	DefersTools() bool
}

// A Catalog is Tools that can list every tool: *toolsift.Toolset is one.
// The Agent sends deferred tools only to a DeferringModel, and only when
// its Tools is a Catalog. Tools must be safe for concurrent use and return
// a slice the caller may keep.
type Catalog interface {
	Tools() []tool.Tool
}

// ToolDef is a tool as offered to the model: a function name, its
// description and the JSON Schema of its arguments (possibly compressed by
// budget.Select).
type ToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	// Server and OriginalName say where the tool comes from (its
	// tool.Tool's): a model whose provider calls some MCP servers itself
	// (hosted MCP) offers such a server's tools under their names there.
	Server       string `json:"server,omitempty"`
	OriginalName string `json:"original_name,omitempty"`
}

// Request is one call to a Model.
type Request struct {
	Messages []tool.Message
	// Tools are offered in this order; the Agent keeps the order stable for
	// the same set so that provider prompt caches hit.
	Tools []ToolDef
	// Deferred, when not empty, is the rest of the catalog, sent as
	// deferred tools (defer_loading) to a DeferringModel: full
	// definitions, by name, the same bytes at every step of a run so that
	// the request's prefix stays cached. Tools then holds the tools loaded
	// from the start, the same at every step, and ends with the
	// search_tools definition, which the model offers as the API's
	// client-executed tool search (its description and parameters). A
	// model that is not a DeferringModel never gets Deferred.
	Deferred []ToolDef
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
	Message tool.Message
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

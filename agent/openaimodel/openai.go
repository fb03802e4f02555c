package openaimodel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/toolsift/toolsift/agent"
	"github.com/toolsift/toolsift/internal/openaiclient"
	"github.com/toolsift/toolsift/provider"
	"github.com/toolsift/toolsift/tool"
)

// ChatOptions configure an OpenAI-compatible Chat Completions model.
type ChatOptions struct {
	// Options say where and how to reach the API: base URL, key, HTTP
	// client, retries, with the environment rule of package provider
	// (the same as [provider.NewEmbedder]'s).
	provider.Options
	// Stream requests server-sent events and accumulates the deltas
	// (content and tool-call arguments, including parallel calls), which
	// reach Request.OnDelta as they come. Off by default: every compatible
	// server answers a plain request, while one that does not stream
	// answers a streaming request with one JSON body, an error wrapping
	// agent.ErrNoStream.
	Stream bool
	// Temperature, when not nil, is sent as is.
	Temperature *float64
}

// Chat is a Model speaking the Chat Completions API of OpenAI or of any
// compatible server (vLLM, Ollama, llama.cpp, LiteLLM, ...), streaming or
// not. It is safe for concurrent use. It is not a DeferringModel: Chat
// Completions has no deferred tools, so the Agent chooses tools per step,
// and a tool message's Found is not sent (its content lists the tools).
type Chat struct {
	client      openai.Client
	model       string
	stream      bool
	temperature *float64
}

var _ agent.Model = (*Chat)(nil)

// NewChat returns a Chat Completions model named model (e.g. "gpt-4o-mini").
// Nil opts mean non-streaming with the environment's endpoint. Options that
// cannot reach an endpoint (no model name, a base URL that is not http(s),
// api.openai.com without a key) fail here with an error wrapping
// ErrOptions, not at the first request.
func NewChat(model string, opts *ChatOptions) (*Chat, error) {
	if model == "" {
		return nil, fmt.Errorf("%w: no model name", ErrOptions)
	}
	if opts == nil {
		opts = &ChatOptions{}
	}
	endpoint, err := opts.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOptions, err)
	}
	return &Chat{
		client:      openaiclient.New(openaiclient.Endpoint(endpoint)),
		model:       model,
		stream:      opts.Stream,
		temperature: opts.Temperature,
	}, nil
}

// Complete implements Model.
func (m *Chat) Complete(ctx context.Context, req agent.Request) (agent.Response, error) {
	params, err := m.params(req)
	if err != nil {
		return agent.Response{}, err
	}
	var resp agent.Response
	if m.stream {
		resp, err = m.completeStream(ctx, params, req.OnDelta)
	} else {
		resp, err = m.complete(ctx, params)
	}
	if err != nil {
		return agent.Response{}, fmt.Errorf("%w: %s: %w", agent.ErrModel, m.model, err)
	}
	return resp, nil
}

func (m *Chat) params(req agent.Request) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{Model: shared.ChatModel(m.model)}
	if m.temperature != nil {
		p.Temperature = openai.Float(*m.temperature)
	}
	for _, msg := range req.Messages {
		p.Messages = append(p.Messages, toOpenAIMessage(msg))
	}
	for _, t := range req.Tools {
		fn := shared.FunctionDefinitionParam{Name: t.Name}
		if t.Description != "" {
			fn.Description = openai.String(t.Description)
		}
		params, err := toFunctionParameters(t.Parameters)
		if err != nil {
			return p, fmt.Errorf("%w: tool %s: parameters: %w", agent.ErrModel, t.Name, err)
		}
		fn.Parameters = params
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(fn))
	}
	return p, nil
}

// toFunctionParameters decodes a JSON Schema into the SDK's map. A missing
// schema becomes an empty object schema: some servers reject tools without
// parameters.
func toFunctionParameters(raw json.RawMessage) (shared.FunctionParameters, error) {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return shared.FunctionParameters{"type": "object", "properties": map[string]any{}}, nil
	}
	var params shared.FunctionParameters
	if err := json.Unmarshal(raw, &params); err != nil {
		return nil, err
	}
	return params, nil
}

func toOpenAIMessage(msg tool.Message) openai.ChatCompletionMessageParamUnion {
	switch msg.Role {
	case tool.RoleSystem:
		return openai.SystemMessage(msg.Content)
	case tool.RoleTool:
		return openai.ToolMessage(msg.Content, msg.ToolCallID)
	case tool.RoleAssistant:
		var a openai.ChatCompletionAssistantMessageParam
		if msg.Content != "" || len(msg.ToolCalls) == 0 {
			a.Content.OfString = openai.String(msg.Content)
		}
		for _, c := range msg.ToolCalls {
			a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID: c.ID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
						Name:      c.Name,
						Arguments: c.Arguments,
					},
				},
			})
		}
		return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}
	default:
		return openai.UserMessage(msg.Content)
	}
}

func (m *Chat) complete(ctx context.Context, p openai.ChatCompletionNewParams) (agent.Response, error) {
	cc, err := m.client.Chat.Completions.New(ctx, p)
	if err != nil {
		return agent.Response{}, err
	}
	if len(cc.Choices) == 0 {
		return agent.Response{}, errors.New("response has no choices")
	}
	ch := cc.Choices[0]
	msg := tool.Message{Role: tool.RoleAssistant, Content: ch.Message.Content}
	if msg.Content == "" {
		msg.Content = ch.Message.Refusal
	}
	for _, tc := range ch.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue
		}
		msg.ToolCalls = append(msg.ToolCalls, tool.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	agent.FillCallIDs(msg.ToolCalls)
	return agent.Response{
		Message:      msg,
		FinishReason: ch.FinishReason,
		Usage:        fromOpenAIUsage(cc.Usage),
		Model:        cc.Model,
	}, nil
}

func (m *Chat) completeStream(ctx context.Context, p openai.ChatCompletionNewParams, onDelta func(agent.Delta)) (agent.Response, error) {
	p.StreamOptions.IncludeUsage = openai.Bool(true)
	var raw *http.Response
	stream := m.client.Chat.Completions.NewStreaming(ctx, p, option.WithResponseInto(&raw))
	defer stream.Close()
	acc := streamAccumulator{onDelta: onDelta}
	for stream.Next() {
		acc.add(stream.Current())
	}
	if err := stream.Err(); err != nil {
		return agent.Response{}, err
	}
	if err := ctx.Err(); err != nil {
		return agent.Response{}, err
	}
	if !acc.choices {
		if err := notStreamed(raw, "openaimodel.ChatOptions.Stream"); err != nil {
			return agent.Response{}, err
		}
		return agent.Response{}, errors.New("stream ended without a choice")
	}
	return acc.response(), nil
}

// notStreamed is the error of a streaming request that got no event, when
// the reply was not an event stream: the server does not stream (it
// ignores "stream", as such servers do, and answers with one JSON body).
// option names the knob that turns streaming off. Nil when the reply was
// an event stream, empty or not.
func notStreamed(resp *http.Response, option string) error {
	if resp == nil {
		return nil
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "text/event-stream" {
		return nil
	}
	if mt == "" {
		mt = "a reply without a Content-Type"
	}
	return fmt.Errorf("%w: it answered a streaming request with %s, not text/event-stream; set %s to false", agent.ErrNoStream, mt, option)
}

func fromOpenAIUsage(u openai.CompletionUsage) agent.Usage {
	return agent.Usage{
		PromptTokens:       int(u.PromptTokens),
		CachedPromptTokens: int(u.PromptTokensDetails.CachedTokens),
		CompletionTokens:   int(u.CompletionTokens),
		TotalTokens:        int(u.TotalTokens),
	}
}

// streamAccumulator assembles the first choice of a streamed completion.
//
// We accumulate ourselves rather than with openai.ChatCompletionAccumulator:
// that one rejects a whole chunk when a provider changes the completion id
// mid-stream, and it merges calls that compatible servers (some Gemini and
// vLLM versions) send in parallel under one index with distinct ids. Here a
// call is keyed by its index; a delta that carries a new id for an index
// whose call already has one starts a new call.
type streamAccumulator struct {
	content strings.Builder
	refusal strings.Builder
	choices bool // a chunk carried the first choice
	calls   []*callBuilder
	byIndex map[int64]*callBuilder
	finish  string
	usage   agent.Usage
	model   string
	// onDelta, when set, gets each piece as it is added: text, and tool
	// call pieces at their index among the reply's ToolCalls.
	onDelta func(agent.Delta)
}

type callBuilder struct {
	index int // among the reply's calls
	id    string
	name  strings.Builder
	args  strings.Builder
}

func (a *streamAccumulator) add(chunk openai.ChatCompletionChunk) {
	if chunk.Model != "" {
		a.model = chunk.Model
	}
	if chunk.JSON.Usage.Valid() && (chunk.Usage.TotalTokens > 0 || chunk.Usage.PromptTokens > 0) {
		a.usage = fromOpenAIUsage(chunk.Usage)
	}
	for _, ch := range chunk.Choices {
		if ch.Index != 0 {
			continue // we ask for one choice
		}
		a.choices = true
		if ch.FinishReason != "" {
			a.finish = ch.FinishReason
		}
		d := ch.Delta
		a.content.WriteString(d.Content)
		a.refusal.WriteString(d.Refusal)
		if a.onDelta != nil && d.Content+d.Refusal != "" {
			a.onDelta(agent.Delta{Text: d.Content + d.Refusal})
		}
		for _, tc := range d.ToolCalls {
			if tc.Type != "" && tc.Type != "function" {
				continue
			}
			idx := tc.Index
			if idx < 0 {
				idx = 0 // some servers send -1 for a single call
			}
			if a.byIndex == nil {
				a.byIndex = make(map[int64]*callBuilder)
			}
			b := a.byIndex[idx]
			if b == nil || (tc.ID != "" && b.id != "" && tc.ID != b.id) {
				b = &callBuilder{index: len(a.calls)}
				a.byIndex[idx] = b
				a.calls = append(a.calls, b)
			}
			piece := agent.Delta{Tool: true, Index: b.index, Name: tc.Function.Name, Arguments: tc.Function.Arguments}
			if b.id == "" {
				b.id = tc.ID
				piece.ID = tc.ID
			}
			b.name.WriteString(tc.Function.Name)
			b.args.WriteString(tc.Function.Arguments)
			if a.onDelta != nil && piece.ID+piece.Name+piece.Arguments != "" {
				a.onDelta(piece)
			}
		}
	}
}

func (a *streamAccumulator) response() agent.Response {
	msg := tool.Message{Role: tool.RoleAssistant, Content: a.content.String()}
	if msg.Content == "" {
		msg.Content = a.refusal.String()
	}
	for _, b := range a.calls {
		msg.ToolCalls = append(msg.ToolCalls, tool.ToolCall{ID: b.id, Name: b.name.String(), Arguments: b.args.String()})
	}
	agent.FillCallIDs(msg.ToolCalls)
	return agent.Response{Message: msg, FinishReason: a.finish, Usage: a.usage, Model: a.model}
}

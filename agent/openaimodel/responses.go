package openaimodel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/toolsift/toolsift/agent"
	"github.com/toolsift/toolsift/internal/openaiclient"
	"github.com/toolsift/toolsift/provider"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
)

// ResponsesOptions configure a model of the Chat Responses API.
type ResponsesOptions struct {
	// Options say where and how to reach the API, as for NewChat.
	provider.Options
	// Stream requests server-sent events: text and function-call argument
	// deltas reach Request.OnDelta as they come. Off by default, as for
	// ChatOptions.Stream: a server that does not stream answers a
	// streaming request with an error wrapping agent.ErrNoStream.
	Stream bool
	// Temperature, when not nil, is sent as is.
	Temperature *float64
	// NoDefer turns deferred tools off: the Agent then chooses the tools
	// of every step itself, as for Chat Completions.
	NoDefer bool
	// Hosted are MCP servers the API reaches itself (its "mcp" tool). Each
	// must also be a server of the Toolset (the same server, reached by
	// toolsift too), so that its tools are in the catalog: the Agent's
	// Think chooses among them as among any tools, and those it offers go
	// in the mcp tool's allowed_tools (under their names on the server)
	// instead of being sent as functions; the provider then calls them.
	Hosted []HostedMCP
}

// HostedMCP is an MCP server the Responses API calls itself. Calls it
// makes are not asked of Options.Approve (require_approval is "never"):
// declare only servers whose tools may run unasked.
type HostedMCP struct {
	// Server is the server's name in the Toolset's config: the tools whose
	// tool.Tool.Server it is are this server's.
	Server string
	// Label is the server_label sent; empty means Server.
	Label string
	// URL is the server's URL as the provider reaches it (server_url).
	URL string
	// Description, when set, is sent as server_description.
	Description string
	// Headers are sent by the provider to the server (an Authorization
	// header, for one). They are sent in each request's body and never
	// appear in errors.
	Headers map[string]string
}

// Responses is a Model speaking OpenAI's Responses API, or any compatible
// server's, streaming or not. The conversation goes whole with every
// request as input items (store is false), so it needs no server-side
// state. It is a DeferringModel: deferred tools are function tools with
// defer_loading, search_tools is the API's tool_search tool with client
// execution, a tool_search_call comes back as a ToolCall with Search set,
// and its answer goes as a tool_search_output holding the definitions of
// the tools the search found. Usage reports input_tokens_details.
// cached_tokens as CachedPromptTokens. It is safe for concurrent use.
type Responses struct {
	client      openai.Client
	model       string
	stream      bool
	temperature *float64
	noDefer     bool
	hosted      map[string]HostedMCP // by Server
}

var _ agent.DeferringModel = (*Responses)(nil)

// NewResponses returns a Responses API model named model (e.g.
// "gpt-5.4-mini"). Nil opts mean non-streaming with the environment's
// endpoint. Options that cannot reach an endpoint, and hosted servers
// without a name or URL or declared twice, fail here with an error
// wrapping ErrOptions.
func NewResponses(model string, opts *ResponsesOptions) (*Responses, error) {
	if model == "" {
		return nil, fmt.Errorf("%w: no model name", ErrOptions)
	}
	if opts == nil {
		opts = &ResponsesOptions{}
	}
	endpoint, err := opts.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOptions, err)
	}
	m := &Responses{
		client:      openaiclient.New(openaiclient.Endpoint(endpoint)),
		model:       model,
		stream:      opts.Stream,
		temperature: opts.Temperature,
		noDefer:     opts.NoDefer,
		hosted:      map[string]HostedMCP{},
	}
	labels := map[string]bool{}
	for i, h := range opts.Hosted {
		if h.Label == "" {
			h.Label = h.Server
		}
		switch {
		case h.Server == "":
			return nil, fmt.Errorf("%w: Hosted[%d]: no Server", ErrOptions, i)
		case h.URL == "":
			return nil, fmt.Errorf("%w: Hosted[%d] (%s): no URL", ErrOptions, i, h.Server)
		case m.hosted[h.Server].Server != "" || labels[h.Label]:
			return nil, fmt.Errorf("%w: Hosted[%d] (%s): declared twice", ErrOptions, i, h.Server)
		}
		labels[h.Label] = true
		m.hosted[h.Server] = h
	}
	return m, nil
}

// DefersTools implements DeferringModel: true unless NoDefer.
func (m *Responses) DefersTools() bool { return !m.noDefer }

// Complete implements Model.
func (m *Responses) Complete(ctx context.Context, req agent.Request) (agent.Response, error) {
	p, labels, err := m.params(req)
	if err != nil {
		return agent.Response{}, fmt.Errorf("%w: %s: %w", agent.ErrModel, m.model, err)
	}
	var r *responses.Response
	if m.stream {
		r, err = m.completeStream(ctx, p, req.OnDelta)
	} else {
		r, err = m.client.Responses.New(ctx, p)
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return agent.Response{}, fmt.Errorf("%w: %s: %w", agent.ErrModel, m.model, err)
	}
	resp, err := fromResponse(r, labels)
	if err != nil {
		return agent.Response{}, fmt.Errorf("%w: %s: %w", agent.ErrModel, m.model, err)
	}
	return resp, nil
}

// hostedTool is a tool of a hosted server: its server's label and its
// name there.
type hostedTool struct{ label, name string }

// params builds the request. labels maps a hosted tool (label, name on
// the server) back to its name in the catalog.
func (m *Responses) params(req agent.Request) (responses.ResponseNewParams, map[hostedTool]string, error) {
	p := responses.ResponseNewParams{Model: shared.ResponsesModel(m.model), Store: openai.Bool(false)}
	if m.temperature != nil {
		p.Temperature = openai.Float(*m.temperature)
	}
	deferred := len(req.Deferred) > 0
	defs := map[string]agent.ToolDef{}
	for _, d := range req.Deferred {
		defs[d.Name] = d
	}

	// Tools: the loaded ones (hosted ones grouped per server), the
	// search tool, then the deferred ones.
	labels := map[hostedTool]string{}
	allowed := map[string][]string{} // by Server
	var servers []string
	for _, t := range req.Tools {
		if h, ok := m.hosted[t.Server]; ok && t.Server != "" {
			name := cmpOr(t.OriginalName, t.Name)
			if _, seen := allowed[h.Server]; !seen {
				servers = append(servers, h.Server)
			}
			allowed[h.Server] = append(allowed[h.Server], name)
			labels[hostedTool{h.Label, name}] = t.Name
			continue
		}
		if t.Name == think.SearchToolName && deferred {
			params, err := toFunctionParameters(t.Parameters)
			if err != nil {
				return p, nil, fmt.Errorf("tool %s: parameters: %w", t.Name, err)
			}
			p.Tools = append(p.Tools, responses.ToolUnionParam{OfToolSearch: &responses.ToolSearchToolParam{
				Execution:   responses.ToolSearchToolExecutionClient,
				Description: openai.String(t.Description),
				Parameters:  map[string]any(params),
			}})
			continue
		}
		fn, err := functionTool(t, false)
		if err != nil {
			return p, nil, err
		}
		p.Tools = append(p.Tools, responses.ToolUnionParam{OfFunction: fn})
	}
	for _, s := range servers {
		h := m.hosted[s]
		mt := &responses.ToolMcpParam{
			ServerLabel:  h.Label,
			ServerURL:    openai.String(h.URL),
			AllowedTools: responses.ToolMcpAllowedToolsUnionParam{OfMcpAllowedTools: allowed[s]},
			RequireApproval: responses.ToolMcpRequireApprovalUnionParam{
				OfMcpToolApprovalSetting: openai.String("never"),
			},
			Headers: h.Headers,
		}
		if h.Description != "" {
			mt.ServerDescription = openai.String(h.Description)
		}
		p.Tools = append(p.Tools, responses.ToolUnionParam{OfMcp: mt})
	}
	for _, d := range req.Deferred {
		fn, err := functionTool(d, true)
		if err != nil {
			return p, nil, err
		}
		p.Tools = append(p.Tools, responses.ToolUnionParam{OfFunction: fn})
	}

	// Input: the conversation, statelessly.
	search := map[string]bool{} // call ids of native searches
	var input responses.ResponseInputParam
	for _, msg := range req.Messages {
		switch msg.Role {
		case tool.RoleSystem, tool.RoleUser:
			input = append(input, responses.ResponseInputItemParamOfMessage(msg.Content, responses.EasyInputMessageRole(msg.Role)))
		case tool.RoleAssistant:
			for _, h := range msg.Hosted {
				c := &responses.ResponseInputItemMcpCallParam{ID: h.ID, Arguments: h.Arguments, Name: h.Name, ServerLabel: h.Server, Status: "completed"}
				if h.Output != "" {
					c.Output = openai.String(h.Output)
				}
				if h.Error != "" {
					var content any = h.Error
					if json.Valid([]byte(h.Error)) {
						content = json.RawMessage(h.Error)
					}
					c.Error = responses.McpToolCallErrorUnionParam{OfMcpToolExecutionError: &responses.McpToolCallErrorMcpToolExecutionErrorParam{Content: content}}
				}
				input = append(input, responses.ResponseInputItemUnionParam{OfMcpCall: c})
			}
			if msg.Content != "" {
				input = append(input, responses.ResponseInputItemParamOfMessage(msg.Content, responses.EasyInputMessageRoleAssistant))
			}
			for _, c := range msg.ToolCalls {
				if c.Search && deferred {
					search[c.ID] = true
					var args any = map[string]any{}
					if json.Valid([]byte(c.Arguments)) {
						args = json.RawMessage(c.Arguments)
					}
					input = append(input, responses.ResponseInputItemUnionParam{OfToolSearchCall: &responses.ResponseInputItemToolSearchCallParam{
						CallID: openai.String(c.ID), Arguments: args, Execution: "client", Status: "completed",
					}})
					continue
				}
				input = append(input, responses.ResponseInputItemParamOfFunctionCall(c.Arguments, c.ID, c.Name))
			}
		case tool.RoleTool:
			if search[msg.ToolCallID] {
				out := &responses.ResponseToolSearchOutputItemParam{
					CallID:    openai.String(msg.ToolCallID),
					Execution: responses.ResponseToolSearchOutputItemParamExecutionClient,
					Status:    responses.ResponseToolSearchOutputItemParamStatusCompleted,
					Tools:     []responses.ResponseToolSearchOutputItemParamToolUnion{},
				}
				for _, name := range msg.Found {
					d, ok := defs[name]
					if !ok {
						continue // loaded already, or no longer in the catalog
					}
					fn, err := functionTool(d, true)
					if err != nil {
						return p, nil, err
					}
					out.Tools = append(out.Tools, responses.ResponseToolSearchOutputItemParamToolUnion{OfFunction: fn})
				}
				input = append(input, responses.ResponseInputItemUnionParam{OfToolSearchOutput: out})
				continue
			}
			out := responses.ResponseInputItemParamOfFunctionCallOutput(msg.Content)
			out.OfFunctionCallOutput.CallID = openai.String(msg.ToolCallID)
			input = append(input, out)
		}
	}
	p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: input}
	return p, labels, nil
}

// functionTool is a function tool of the Responses API. strict is false:
// MCP schemas are rarely strict-mode schemas (every property required, no
// additional properties), and the Responses API makes strict the default.
func functionTool(t agent.ToolDef, deferLoading bool) (*responses.FunctionToolParam, error) {
	params, err := toFunctionParameters(t.Parameters)
	if err != nil {
		return nil, fmt.Errorf("tool %s: parameters: %w", t.Name, err)
	}
	fn := &responses.FunctionToolParam{Name: t.Name, Parameters: params, Strict: openai.Bool(false)}
	if t.Description != "" {
		fn.Description = openai.String(t.Description)
	}
	if deferLoading {
		fn.DeferLoading = openai.Bool(true)
	}
	return fn, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// outputItem is the part of a Response's output item we read, decoded
// from its JSON (arguments are a string for function calls and an object
// for tool_search_call).
type outputItem struct {
	Type        string          `json:"type"`
	ID          string          `json:"id"`
	Role        string          `json:"role"`
	CallID      string          `json:"call_id"`
	Name        string          `json:"name"`
	ServerLabel string          `json:"server_label"`
	Arguments   json.RawMessage `json:"arguments"`
	Execution   string          `json:"execution"`
	Output      *string         `json:"output"`
	Error       json.RawMessage `json:"error"`
	Content     []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	} `json:"content"`
}

// arguments returns a call's arguments as text: a JSON string's value, or
// an object's JSON.
func (it outputItem) arguments() string {
	var s string
	if err := json.Unmarshal(it.Arguments, &s); err == nil {
		return s
	}
	if len(it.Arguments) == 0 || string(it.Arguments) == "null" {
		return "{}"
	}
	return string(it.Arguments)
}

// fromResponse turns a whole Response into ours.
func fromResponse(r *responses.Response, labels map[hostedTool]string) (agent.Response, error) {
	switch r.Status {
	case responses.ResponseStatusFailed:
		msg := r.Error.Message
		if msg == "" {
			msg = "no reason given"
		}
		return agent.Response{}, fmt.Errorf("response %s failed: %s (%s)", r.ID, msg, r.Error.Code)
	case responses.ResponseStatusCancelled:
		return agent.Response{}, fmt.Errorf("response %s was cancelled", r.ID)
	}
	msg := tool.Message{Role: tool.RoleAssistant}
	var text, refusal strings.Builder
	for i, raw := range r.Output {
		var it outputItem
		if err := json.Unmarshal([]byte(raw.RawJSON()), &it); err != nil {
			return agent.Response{}, fmt.Errorf("output item %d: %w", i, err)
		}
		switch it.Type {
		case "message":
			for _, c := range it.Content {
				text.WriteString(c.Text)
				refusal.WriteString(c.Refusal)
			}
		case "function_call":
			msg.ToolCalls = append(msg.ToolCalls, tool.ToolCall{ID: it.CallID, Name: it.Name, Arguments: it.arguments()})
		case "tool_search_call":
			if it.Execution == "server" {
				continue // the provider searched and loaded by itself
			}
			msg.ToolCalls = append(msg.ToolCalls, tool.ToolCall{ID: it.CallID, Name: think.SearchToolName, Search: true, Arguments: it.arguments()})
		case "mcp_call":
			h := tool.HostedCall{ID: it.ID, Server: it.ServerLabel, Name: it.Name, Tool: labels[hostedTool{it.ServerLabel, it.Name}], Arguments: it.arguments()}
			if it.Output != nil {
				h.Output = *it.Output
			}
			if len(it.Error) > 0 && string(it.Error) != "null" {
				var s string
				if json.Unmarshal(it.Error, &s) != nil {
					s = string(it.Error)
				}
				h.Error = s
			}
			msg.Hosted = append(msg.Hosted, h)
		case "mcp_approval_request":
			return agent.Response{}, fmt.Errorf("hosted server %s asks to approve a call of %s: toolsift sends require_approval \"never\"; the server's approval setting overrides it", it.ServerLabel, it.Name)
		}
	}
	msg.Content = text.String()
	if msg.Content == "" {
		msg.Content = refusal.String()
	}
	agent.FillCallIDs(msg.ToolCalls)
	finish := "stop"
	switch {
	case r.Status == responses.ResponseStatusIncomplete:
		finish = cmpOr(r.IncompleteDetails.Reason, "incomplete")
	case len(msg.ToolCalls) > 0:
		finish = "tool_calls"
	}
	return agent.Response{
		Message:      msg,
		FinishReason: finish,
		Usage: agent.Usage{
			PromptTokens:       int(r.Usage.InputTokens),
			CachedPromptTokens: int(r.Usage.InputTokensDetails.CachedTokens),
			CompletionTokens:   int(r.Usage.OutputTokens),
			TotalTokens:        int(r.Usage.TotalTokens),
		},
		Model: string(r.Model),
	}, nil
}

// completeStream reads the event stream: text and function-call deltas go
// to onDelta as they come; the reply is the response.completed event's
// whole response.
func (m *Responses) completeStream(ctx context.Context, p responses.ResponseNewParams, onDelta func(agent.Delta)) (*responses.Response, error) {
	var raw *http.Response
	stream := m.client.Responses.NewStreaming(ctx, p, option.WithResponseInto(&raw))
	defer stream.Close()
	calls := map[int64]int{} // output index → index among the tool calls
	var final *responses.Response
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "response.output_text.delta", "response.refusal.delta":
			if onDelta != nil && ev.Delta != "" {
				onDelta(agent.Delta{Text: ev.Delta})
			}
		case "response.output_item.added":
			var it outputItem
			if json.Unmarshal([]byte(ev.Item.RawJSON()), &it) != nil {
				continue
			}
			if it.Type == "function_call" || (it.Type == "tool_search_call" && it.Execution != "server") {
				i := len(calls)
				calls[ev.OutputIndex] = i
				name := it.Name
				if it.Type == "tool_search_call" {
					name = think.SearchToolName
				}
				if onDelta != nil {
					onDelta(agent.Delta{Tool: true, Index: i, ID: it.CallID, Name: name})
				}
			}
		case "response.function_call_arguments.delta":
			if i, ok := calls[ev.OutputIndex]; ok && onDelta != nil && ev.Delta != "" {
				onDelta(agent.Delta{Tool: true, Index: i, Arguments: ev.Delta})
			}
		case "response.output_item.done":
			var it outputItem
			if json.Unmarshal([]byte(ev.Item.RawJSON()), &it) == nil && it.Type == "tool_search_call" {
				if i, ok := calls[ev.OutputIndex]; ok && onDelta != nil {
					onDelta(agent.Delta{Tool: true, Index: i, Arguments: it.arguments()})
				}
			}
		case "response.completed", "response.incomplete", "response.failed":
			r := ev.Response
			final = &r
		case "error":
			return nil, fmt.Errorf("stream error %s: %s", cmpOr(ev.Code, "(no code)"), ev.Message)
		}
	}
	if err := stream.Err(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if final == nil {
		if err := notStreamed(raw, "openaimodel.ResponsesOptions.Stream"); err != nil {
			return nil, err
		}
		return nil, errors.New("stream ended without response.completed")
	}
	return final, nil
}

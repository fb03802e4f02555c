package anthropicmodel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/toolsift/toolsift/agent"
	"github.com/toolsift/toolsift/internal/httpbound"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
)

// DefaultBaseURL is the Anthropic API.
const DefaultBaseURL = "https://api.anthropic.com"

// defaultMaxTokens bounds one reply when Options.MaxTokens is zero.
const defaultMaxTokens = 4096

// maxBreakpoints is how many cache_control markers one request may carry.
const maxBreakpoints = 4

// mcpBeta is the beta of the MCP connector whose mcp_toolset tool says
// which of a server's tools are enabled.
const mcpBeta = anthropic.AnthropicBetaMCPClient2025_11_20

// ErrOptions reports Options that cannot reach an endpoint.
var ErrOptions = errors.New("anthropicmodel: invalid options")

// Options configure a Model. The zero value reads $ANTHROPIC_API_KEY and
// $ANTHROPIC_BASE_URL and does not stream.
type Options struct {
	// BaseURL of the API without the version path
	// ("https://api.anthropic.com"). Empty means $ANTHROPIC_BASE_URL, else
	// DefaultBaseURL.
	BaseURL string
	// APIKey is sent as x-api-key. Empty means $ANTHROPIC_API_KEY.
	APIKey string
	// HTTPClient sends the requests; nil means the SDK's default.
	HTTPClient *http.Client
	// MaxRetries of a failed request: zero means the SDK's default (2), a
	// negative value disables retries.
	MaxRetries int
	// MaxTokens bounds one reply; zero means 4,096.
	MaxTokens int64
	// MaxReplyBytes bounds one reply's body, a whole event stream (so each
	// event) included: zero means 64 MiB, negative no limit. ReplyTimeout
	// bounds one request to the reply's last byte: zero means 10 min,
	// negative none. ReplyIdleTimeout bounds the wait for the next bytes
	// once a reply's headers came: zero means 2 min, negative none. The
	// same limits and defaults as provider.Options' (docs/limits.md).
	MaxReplyBytes    int64
	ReplyTimeout     time.Duration
	ReplyIdleTimeout time.Duration
	// Temperature, when not nil, is sent as is.
	Temperature *float64
	// Stream requests server-sent events and calls Request.OnDelta with
	// each piece of text and of tool-call arguments. Off by default: a
	// server that does not stream answers a streaming request with an
	// error wrapping agent.ErrNoStream. A MaxTokens whose reply may take
	// over 10 minutes (above 21,333 tokens) needs it: the API refuses
	// such requests unstreamed, and New says so.
	Stream bool
	// NoPromptCache leaves out the cache_control breakpoints (see Model).
	NoPromptCache bool
	// NoDefer never sends deferred tools: the agent chooses tools per
	// step (see Model).
	NoDefer bool
	// MCPServers are reached by Anthropic's MCP connector instead of by
	// this process: see MCPServer.
	MCPServers []MCPServer
}

// MCPServer is a remote MCP server that Anthropic's API calls itself (the
// MCP connector, beta "mcp-client-2025-11-20"). Declare the same server,
// under the same name, in the Toolset's config too: toolsift then indexes
// its tools and ranks them with the rest, and at every step the tools of
// this server that the Think step chose ("<Name>__<tool>") are the
// server's enabled tools in the request (its allowed tools), while every
// other tool of the server stays disabled. The model's calls to them run
// on Anthropic's side; their results come back as text in the reply.
type MCPServer struct {
	// Name is the server's name in the Toolset's config.
	Name string
	// URL is the server's streamable HTTP or SSE endpoint, reachable from
	// Anthropic's servers.
	URL string
	// AuthorizationToken, when set, is sent to the server as a bearer
	// token by Anthropic. It never appears in errors.
	AuthorizationToken string
}

// Model is an agent.Model speaking Anthropic's Messages API through
// github.com/anthropics/anthropic-sdk-go, streaming or not. It is safe for
// concurrent use.
//
// Prompt caching: unless Options.NoPromptCache, every request carries
// cache_control breakpoints where the prefix stays the same from one step
// to the next: the last tool (tools come first in the prefix), the last
// system block, the end of the previous request's messages and the end of
// this request's messages (the history only ever grows, so the next step
// reads this one's prefix from the cache). That is at most 4, the API's cap.
// Usage reports cache reads as agent.Usage.CachedPromptTokens and cache
// writes as CacheWriteTokens.
//
// Deferred tools: Model is an agent.DeferringModel. When the agent sends
// the catalog as Request.Deferred, those tools go with defer_loading: true
// (the model does not see them until loaded), the tools loaded from the
// start end with search_tools, which is Anthropic's custom tool search: its
// calls come back as a tool.ToolCall with Search set, and the answer's Found
// tools that are deferred are sent as tool_reference blocks in the
// tool_result, which loads them. The tools of the request then stay the same
// bytes for the whole run, and the cache breakpoint sits on the last loaded
// tool. With Options.NoDefer, or MCPServers (the connector's toolsets are
// chosen per step), the agent chooses tools per step instead.
type Model struct {
	client        anthropic.Client
	model         string
	maxTokens     int64
	temperature   *float64
	stream        bool
	noPromptCache bool
	noDefer       bool
	mcp           []MCPServer
}

var _ agent.DeferringModel = (*Model)(nil)

// New returns a Messages API model named model (e.g. "claude-sonnet-4-5").
// Nil opts mean the defaults. Options that cannot reach an endpoint (no
// model name, a base URL that is not http(s), api.anthropic.com without a
// key, an MCP server without a name or URL) fail here with an error
// wrapping ErrOptions.
func New(model string, opts *Options) (*Model, error) {
	if model == "" {
		return nil, fmt.Errorf("%w: no model name", ErrOptions)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.BaseURL == "" {
		o.BaseURL = os.Getenv("ANTHROPIC_BASE_URL")
	}
	if o.BaseURL == "" {
		o.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(o.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: base URL %q is not an http(s) URL", ErrOptions, redactURL(o.BaseURL))
	}
	if o.APIKey == "" {
		o.APIKey = os.Getenv("ANTHROPIC_API_KEY")
	}
	if o.APIKey == "" && u.Host == "api.anthropic.com" {
		return nil, fmt.Errorf("%w: no API key for %s (set ANTHROPIC_API_KEY)", ErrOptions, u.Host)
	}
	if o.MaxTokens < 0 {
		return nil, fmt.Errorf("%w: negative MaxTokens", ErrOptions)
	}
	if o.MaxTokens == 0 {
		o.MaxTokens = defaultMaxTokens
	}
	if !o.Stream {
		// The SDK refuses these at every request; say so once, here.
		if _, err := anthropic.CalculateNonStreamingTimeout(int(o.MaxTokens), anthropic.Model(model), nil); err != nil {
			return nil, fmt.Errorf("%w: MaxTokens %d without Stream: %v; set anthropicmodel.Options.Stream", ErrOptions, o.MaxTokens, err)
		}
	}
	seen := map[string]bool{}
	for i, s := range o.MCPServers {
		switch {
		case s.Name == "" || s.URL == "":
			return nil, fmt.Errorf("%w: MCPServers[%d]: a name and a URL are required", ErrOptions, i)
		case seen[s.Name]:
			return nil, fmt.Errorf("%w: MCPServers[%d]: server %q declared twice", ErrOptions, i, s.Name)
		}
		seen[s.Name] = true
	}
	// The SDK's environment defaults would also read profiles and federation
	// settings; we resolved the endpoint above and use exactly that.
	ro := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(o.BaseURL),
		option.WithAPIKey(o.APIKey),
	}
	hc := httpbound.Client(o.HTTPClient, httpbound.Limits{
		MaxBytes:          httpbound.Resolve(o.MaxReplyBytes, httpbound.DefaultMaxBytes),
		Timeout:           httpbound.Resolve(o.ReplyTimeout, httpbound.DefaultTimeout),
		IdleTimeout:       httpbound.Resolve(o.ReplyIdleTimeout, httpbound.DefaultIdleTimeout),
		MaxBytesOption:    "anthropicmodel.Options.MaxReplyBytes",
		TimeoutOption:     "anthropicmodel.Options.ReplyTimeout",
		IdleTimeoutOption: "anthropicmodel.Options.ReplyIdleTimeout",
	})
	if hc != http.DefaultClient {
		ro = append(ro, option.WithHTTPClient(hc))
	}
	switch {
	case o.MaxRetries < 0:
		ro = append(ro, option.WithMaxRetries(0))
	case o.MaxRetries > 0:
		ro = append(ro, option.WithMaxRetries(o.MaxRetries))
	}
	return &Model{
		client:        anthropic.NewClient(ro...),
		model:         model,
		maxTokens:     o.MaxTokens,
		temperature:   o.Temperature,
		stream:        o.Stream,
		noPromptCache: o.NoPromptCache,
		noDefer:       o.NoDefer,
		mcp:           append([]MCPServer(nil), o.MCPServers...),
	}, nil
}

// redactURL drops a URL's user info and query, where secrets live.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// DefersTools implements agent.DeferringModel.
func (m *Model) DefersTools() bool { return !m.noDefer && len(m.mcp) == 0 }

// Complete implements agent.Model. Errors wrap agent.ErrModel; the API's
// own error (*anthropic.Error of the SDK, with the HTTP status) stays
// reachable with errors.As.
func (m *Model) Complete(ctx context.Context, req agent.Request) (agent.Response, error) {
	params, err := m.params(req)
	if err != nil {
		return agent.Response{}, fmt.Errorf("%w: %s: %w", agent.ErrModel, m.model, err)
	}
	var msg *anthropic.BetaMessage
	var streamed []*grown
	if m.stream {
		msg, streamed, err = m.completeStream(ctx, params, req.OnDelta)
	} else {
		msg, err = m.client.Beta.Messages.New(ctx, params)
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return agent.Response{}, fmt.Errorf("%w: %s: %w", agent.ErrModel, m.model, err)
	}
	resp := fromMessage(msg, streamed)
	if len(req.Deferred) > 0 {
		// With deferred tools, search_tools is the API's tool search.
		for i := range resp.Message.ToolCalls {
			if resp.Message.ToolCalls[i].Name == think.SearchToolName {
				resp.Message.ToolCalls[i].Search = true
			}
		}
	}
	return resp, nil
}

// params converts a request. The Beta Messages API is used throughout: it
// is the one with the MCP connector, and otherwise the same API.
func (m *Model) params(req agent.Request) (anthropic.BetaMessageNewParams, error) {
	p := anthropic.BetaMessageNewParams{
		Model:     anthropic.Model(m.model),
		MaxTokens: m.maxTokens,
	}
	if m.temperature != nil {
		p.Temperature = anthropic.Float(*m.temperature)
	}
	deferred := make(map[string]bool, len(req.Deferred))
	for _, t := range req.Deferred {
		deferred[t.Name] = true
	}
	msgs, system := toMessages(req.Messages, deferred)
	p.Messages, p.System = msgs, system

	byServer := map[string][]string{}
	custom := func(t agent.ToolDef, deferLoading bool) error {
		schema, err := inputSchema(t.Parameters)
		if err != nil {
			return fmt.Errorf("tool %s: parameters: %w", t.Name, err)
		}
		tp := &anthropic.BetaToolParam{Name: t.Name, InputSchema: schema}
		if t.Description != "" {
			tp.Description = anthropic.String(t.Description)
		}
		if deferLoading {
			tp.DeferLoading = anthropic.Bool(true)
		}
		p.Tools = append(p.Tools, anthropic.BetaToolUnionParam{OfTool: tp})
		return nil
	}
	for _, t := range req.Tools {
		if s, name, ok := m.connectorTool(t.Name); ok {
			byServer[s] = append(byServer[s], name)
			continue
		}
		if err := custom(t, false); err != nil {
			return p, err
		}
	}
	loaded := len(p.Tools) // the tools the model sees from the start
	for _, t := range req.Deferred {
		if err := custom(t, true); err != nil {
			return p, err
		}
	}
	for _, s := range m.mcp {
		def := anthropic.BetaRequestMCPServerURLDefinitionParam{Name: s.Name, URL: s.URL}
		if s.AuthorizationToken != "" {
			def.AuthorizationToken = anthropic.String(s.AuthorizationToken)
		}
		p.MCPServers = append(p.MCPServers, def)
		// Every tool of the server is disabled but those chosen for this
		// step: toolsift's selection is the server's allowed tools.
		set := &anthropic.BetaMCPToolsetParam{
			MCPServerName: s.Name,
			DefaultConfig: anthropic.BetaMCPToolDefaultConfigParam{Enabled: anthropic.Bool(false)},
		}
		if names := byServer[s.Name]; len(names) > 0 {
			set.Configs = make(map[string]anthropic.BetaMCPToolConfigParam, len(names))
			for _, n := range names {
				set.Configs[n] = anthropic.BetaMCPToolConfigParam{Enabled: anthropic.Bool(true)}
			}
		}
		p.Tools = append(p.Tools, anthropic.BetaToolUnionParam{OfMCPToolset: set})
	}
	if len(m.mcp) > 0 {
		p.Betas = append(p.Betas, mcpBeta)
	}
	if !m.noPromptCache {
		placeBreakpoints(&p, loaded)
	}
	return p, nil
}

// connectorTool reports whether a tool belongs to a server reached by the
// MCP connector, and its name on that server.
func (m *Model) connectorTool(name string) (server, tool string, ok bool) {
	for _, s := range m.mcp {
		if rest, found := strings.CutPrefix(name, s.Name+"__"); found && rest != "" {
			return s.Name, rest, true
		}
	}
	return "", "", false
}

// placeBreakpoints marks where the prefix stays the same between steps:
// the last tool (the last loaded one, before the deferred tools, when
// loaded < len(p.Tools); mcp_toolsets come after them), the last system block, the end of the previous request's
// messages (the last user turn before the latest assistant turn) and the
// end of this request's messages. Anthropic looks back at most 20 blocks
// from a breakpoint for an earlier cached prefix; the breakpoint at the
// previous request's end makes the hit certain however many blocks this
// step added.
func placeBreakpoints(p *anthropic.BetaMessageNewParams, loaded int) {
	n := 0
	mark := func(cc *anthropic.BetaCacheControlEphemeralParam) {
		if cc != nil && n < maxBreakpoints {
			*cc = anthropic.NewBetaCacheControlEphemeralParam()
			n++
		}
	}
	switch {
	case loaded > 0 && loaded < len(p.Tools) && p.Tools[loaded].OfTool != nil && p.Tools[loaded].OfTool.DeferLoading.Value:
		mark(p.Tools[loaded-1].GetCacheControl())
	case len(p.Tools) > 0:
		mark(p.Tools[len(p.Tools)-1].GetCacheControl())
	}
	if len(p.System) > 0 {
		mark(&p.System[len(p.System)-1].CacheControl)
	}
	last := len(p.Messages) - 1
	if last < 0 {
		return
	}
	// The previous request ended with the user turn before the latest
	// assistant turn.
	prev := -1
	for i := last - 1; i >= 1; i-- {
		if p.Messages[i].Role == anthropic.BetaMessageParamRoleAssistant && p.Messages[i-1].Role == anthropic.BetaMessageParamRoleUser {
			prev = i - 1
			break
		}
	}
	if prev >= 0 {
		c := p.Messages[prev].Content
		mark(c[len(c)-1].GetCacheControl())
	}
	c := p.Messages[last].Content
	mark(c[len(c)-1].GetCacheControl())
}

// toMessages converts a conversation: system messages become the system
// blocks, tool results become tool_result blocks of a user turn (a search's
// result, when it found deferred tools, is their tool_reference blocks,
// which load them), and consecutive turns of one role are merged (the API
// alternates roles).
func toMessages(msgs []tool.Message, deferred map[string]bool) ([]anthropic.BetaMessageParam, []anthropic.BetaTextBlockParam) {
	var out []anthropic.BetaMessageParam
	var system []anthropic.BetaTextBlockParam
	add := func(role anthropic.BetaMessageParamRole, blocks ...anthropic.BetaContentBlockParamUnion) {
		if len(blocks) == 0 {
			return
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			return
		}
		out = append(out, anthropic.BetaMessageParam{Role: role, Content: blocks})
	}
	for _, msg := range msgs {
		switch msg.Role {
		case tool.RoleSystem:
			if msg.Content != "" {
				system = append(system, anthropic.BetaTextBlockParam{Text: msg.Content})
			}
		case tool.RoleTool:
			var content []anthropic.BetaToolResultBlockParamContentUnion
			for _, name := range msg.Found {
				if deferred[name] {
					content = append(content, anthropic.BetaToolResultBlockParamContentUnion{OfToolReference: &anthropic.BetaToolReferenceBlockParam{ToolName: name}})
				}
			}
			if content == nil {
				content = []anthropic.BetaToolResultBlockParamContentUnion{{OfText: &anthropic.BetaTextBlockParam{Text: nonEmpty(msg.Content)}}}
			}
			add(anthropic.BetaMessageParamRoleUser, anthropic.BetaContentBlockParamUnion{OfToolResult: &anthropic.BetaToolResultBlockParam{
				ToolUseID: msg.ToolCallID,
				Content:   content,
			}})
		case tool.RoleAssistant:
			var blocks []anthropic.BetaContentBlockParamUnion
			if msg.Content != "" {
				blocks = append(blocks, anthropic.NewBetaTextBlock(msg.Content))
			}
			for _, c := range msg.ToolCalls {
				blocks = append(blocks, anthropic.BetaContentBlockParamUnion{OfToolUse: &anthropic.BetaToolUseBlockParam{
					ID: c.ID, Name: c.Name, Input: toolInput(c.Arguments),
				}})
			}
			add(anthropic.BetaMessageParamRoleAssistant, blocks...)
		default:
			add(anthropic.BetaMessageParamRoleUser, anthropic.NewBetaTextBlock(nonEmpty(msg.Content)))
		}
	}
	return out, system
}

// nonEmpty keeps a text block valid: the API rejects empty text.
func nonEmpty(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(empty)"
	}
	return s
}

// toolInput is a call's arguments as the tool_use block's input, which must
// be an object: arguments that are not one (the agent answered them with an
// error already) are sent as an empty object.
func toolInput(args string) json.RawMessage {
	b := bytes.TrimSpace([]byte(args))
	if len(b) > 0 && b[0] == '{' && json.Valid(b) {
		return json.RawMessage(b)
	}
	return json.RawMessage(`{}`)
}

// inputSchema converts a tool's JSON Schema: properties and required are
// the SDK's fields, anything else (definitions, additionalProperties, ...)
// is kept as is.
func inputSchema(raw json.RawMessage) (anthropic.BetaToolInputSchemaParam, error) {
	var s anthropic.BetaToolInputSchemaParam
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		s.Properties = map[string]any{}
		return s, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return s, err
	}
	if p, ok := m["properties"]; ok {
		s.Properties = p
	} else {
		s.Properties = map[string]any{}
	}
	if r, ok := m["required"]; ok {
		if err := json.Unmarshal(r, &s.Required); err != nil {
			return s, fmt.Errorf("required: %w", err)
		}
	}
	for k, v := range m {
		switch k {
		case "type", "properties", "required":
		default:
			if s.ExtraFields == nil {
				s.ExtraFields = map[string]any{}
			}
			s.ExtraFields[k] = v
		}
	}
	return s, nil
}

// completeStream sends the request as a stream, hands each piece of text
// and of tool-call arguments to onDelta, and returns the whole message with
// what the deltas of its blocks carried.
//
// The deltas that grow a block (text, tool input, thinking) are gathered
// here, not by the SDK's Accumulate: it appends a string per text delta,
// copying the whole text each time, so that a long reply streamed in small
// deltas allocated the square of its length and drove the heap to many
// times the bytes streamed. Thinking is not part of a Response and is not
// kept.
func (m *Model) completeStream(ctx context.Context, p anthropic.BetaMessageNewParams, onDelta func(agent.Delta)) (*anthropic.BetaMessage, []*grown, error) {
	var raw *http.Response
	stream := m.client.Beta.Messages.NewStreaming(ctx, p, option.WithResponseInto(&raw))
	defer stream.Close()
	var msg anthropic.BetaMessage
	var blocks []*grown      // by content block index
	calls := map[int64]int{} // content block index → tool call index
	for stream.Next() {
		ev := stream.Current()
		if ev.Type == "content_block_delta" {
			switch ev.Delta.Type {
			case "text_delta", "input_json_delta", "thinking_delta", "signature_delta":
				if ev.Index < 0 || ev.Index >= int64(len(msg.Content)) {
					return nil, nil, fmt.Errorf("stream: %s for content block %d, of %d", ev.Delta.Type, ev.Index, len(msg.Content))
				}
				for int64(len(blocks)) <= ev.Index {
					blocks = append(blocks, nil)
				}
				g := blocks[ev.Index]
				if g == nil {
					g = &grown{}
					blocks[ev.Index] = g
				}
				switch ev.Delta.Type {
				case "text_delta":
					g.text.WriteString(ev.Delta.Text)
				case "input_json_delta":
					g.input.WriteString(ev.Delta.PartialJSON)
				}
				if onDelta == nil {
					continue
				}
				switch ev.Delta.Type {
				case "text_delta":
					if ev.Delta.Text != "" {
						onDelta(agent.Delta{Text: ev.Delta.Text})
					}
				case "input_json_delta":
					if i, ok := calls[ev.Index]; ok && ev.Delta.PartialJSON != "" {
						onDelta(agent.Delta{Tool: true, Index: i, Arguments: ev.Delta.PartialJSON})
					}
				}
				continue
			}
		}
		if err := msg.Accumulate(ev); err != nil {
			return nil, nil, fmt.Errorf("stream: %w", err)
		}
		if ev.Type == "content_block_start" && ev.ContentBlock.Type == "tool_use" {
			i := len(calls)
			calls[ev.Index] = i
			if onDelta != nil {
				onDelta(agent.Delta{Tool: true, Index: i, ID: ev.ContentBlock.ID, Name: ev.ContentBlock.Name})
			}
		}
	}
	if err := stream.Err(); err != nil {
		return nil, nil, err
	}
	if msg.ID == "" && len(msg.Content) == 0 {
		if err := notStreamed(raw); err != nil {
			return nil, nil, err
		}
		return nil, nil, errors.New("stream ended without a message")
	}
	return &msg, blocks, nil
}

// grown is what the deltas of one streamed content block carried.
type grown struct {
	text, input strings.Builder
}

// fromMessage converts a reply: text blocks are the content, tool_use
// blocks the calls; the MCP connector's calls and results (run by
// Anthropic) are appended to the content as text, so that the conversation
// keeps what they said. streamed, when not nil, holds by block index what
// a stream's deltas carried, in place of the block's text and input: a
// tool input as the model sent it, even when it is not JSON (the SDK
// would make it {} and the tool run with no arguments; the agent refuses
// it and tells the model, as with Chat and Responses).
func fromMessage(msg *anthropic.BetaMessage, streamed []*grown) agent.Response {
	out := tool.Message{Role: tool.RoleAssistant}
	var text []string // joined: a reply of one text block is not copied
	for i, b := range msg.Content {
		bText, bInput := b.Text, string(b.Input)
		if i < len(streamed) && streamed[i] != nil {
			g := streamed[i]
			if g.text.Len() > 0 {
				bText = b.Text + g.text.String()
			}
			if g.input.Len() > 0 {
				bInput = g.input.String()
			}
		}
		switch b.Type {
		case "text":
			text = append(text, bText)
		case "tool_use":
			args := bInput
			if args == "" {
				args = "{}"
			}
			out.ToolCalls = append(out.ToolCalls, tool.ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
		case "mcp_tool_use":
			text = append(text, fmt.Sprintf("\n[%s__%s %s]\n", b.ServerName, b.Name, bInput))
		case "mcp_tool_result":
			text = append(text, mcpResultText(b.RawJSON())+"\n")
		}
	}
	out.Content = strings.Join(text, "")
	u := msg.Usage
	prompt := int(u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens)
	return agent.Response{
		Message:      out,
		FinishReason: finishReason(string(msg.StopReason)),
		Model:        string(msg.Model),
		Usage: agent.Usage{
			PromptTokens:       prompt,
			CachedPromptTokens: int(u.CacheReadInputTokens),
			CacheWriteTokens:   int(u.CacheCreationInputTokens),
			CompletionTokens:   int(u.OutputTokens),
			TotalTokens:        prompt + int(u.OutputTokens),
		},
	}
}

// mcpResultText is the text of an mcp_tool_result block: its content is a
// string or a list of text blocks.
func mcpResultText(raw string) string {
	var r struct {
		Content json.RawMessage `json:"content"`
		IsError bool            `json:"is_error"`
	}
	if json.Unmarshal([]byte(raw), &r) != nil {
		return ""
	}
	var s string
	if json.Unmarshal(r.Content, &s) != nil {
		var blocks []struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(r.Content, &blocks)
		var b strings.Builder
		for _, bl := range blocks {
			b.WriteString(bl.Text)
		}
		s = b.String()
	}
	if r.IsError {
		return "error: " + s
	}
	return s
}

// finishReason maps a stop_reason to the agent's (Chat Completions') words.
func finishReason(s string) string {
	switch s {
	case "end_turn", "stop_sequence":
		return "stop"
	case "tool_use":
		return "tool_calls"
	case "max_tokens":
		return "length"
	}
	return s
}

// notStreamed is the error of a streaming request that got no event, when
// the reply was not an event stream: the server does not stream (it
// ignores "stream" and answers with one JSON body). Nil when the reply was
// an event stream, empty or not.
func notStreamed(resp *http.Response) error {
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
	return fmt.Errorf("%w: it answered a streaming request with %s, not text/event-stream; set anthropicmodel.Options.Stream to false", agent.ErrNoStream, mt)
}

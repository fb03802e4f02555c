// Package anthropictest provides a scripted Anthropic Messages API server for
// the tests of agent/anthropicmodel and of the commands built on it: an httptest server that speaks the
// wire format (JSON, and server-sent events when the request asks to
// stream), answers with the replies of a script, records every request, and
// keeps a prompt cache as the API does (deferred tools are not in the
// prompt until a tool_reference loads them; a prefix is cached at each
// cache_control breakpoint; a later request whose prefix up to a breakpoint
// is byte-identical, cache markers aside, reads it), so that a test sees the
// cache_read_input_tokens and cache_creation_input_tokens a real run would.
//
// It is written against the wire format, not with the SDK, so that it checks
// what the SDK sends.
//
//	srv := anthropictest.NewServer(
//		anthropictest.Reply{ToolCalls: []tool.ToolCall{{Name: "echo", Arguments: `{"text":"hi"}`}}},
//		anthropictest.Reply{Content: "done"},
//	)
//	defer srv.Close()
//	model, _ := anthropicmodel.New("claude-test", &anthropicmodel.Options{BaseURL: srv.URL, APIKey: "test"})
package anthropictest

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"

	"github.com/toolsift/toolsift/internal/scripted"
	"github.com/toolsift/toolsift/tool"
)

// Usage is the token accounting the server reports.
type Usage = scripted.Usage

// Reply is one scripted answer.
type Reply struct {
	// Content of the assistant message (one text block).
	Content string
	// ToolCalls requested (tool_use blocks). An empty ID becomes
	// "toolu_<n>_<i>". Arguments must be a JSON object.
	ToolCalls []tool.ToolCall
	// Usage to report; nil reports the server's cache accounting over
	// tokens counted as bytes / 4.
	Usage *Usage
	// ChunkSize is the number of bytes of text or of arguments per
	// streamed delta; zero means 3.
	ChunkSize int
	// Status, when not zero, answers with this HTTP status and an
	// Anthropic error body whose message is Content.
	Status int
	// Hang blocks until the client gives up.
	Hang bool
	// NoStream answers with one JSON body even when the request asks to
	// stream, as a server that does not stream does.
	NoStream bool
}

// Tool is one entry of a request's tools array.
type Tool struct {
	// Type is empty for a custom tool, else the tool's type
	// ("mcp_toolset", "tool_search_tool_bm25_20251119", ...).
	Type         string
	Name         string
	Description  string
	InputSchema  json.RawMessage
	DeferLoading bool
	// For an mcp_toolset: its server, and the tools it enables
	// (configs with enabled: true), sorted.
	MCPServerName  string
	EnabledTools   []string
	DefaultEnabled *bool
}

// MCPServer is one entry of a request's mcp_servers.
type MCPServer struct {
	Name, URL string
	// HasToken is set when an authorization_token was sent.
	HasToken bool
}

// Request is one recorded request, decoded from the wire.
type Request struct {
	Model  string
	Stream bool
	// Betas is the anthropic-beta header.
	Betas      []string
	System     []string
	Messages   []tool.Message
	Tools      []Tool
	MCPServers []MCPServer
	// Breakpoints are where cache_control markers were, in prefix order:
	// "tools[3]", "system[0]", "messages[2].content[1]".
	Breakpoints []string
	// Usage is what the server reported.
	Usage Usage
	// Body is the raw request body.
	Body json.RawMessage
}

// ToolNames returns the names of the custom tools sent, deferred or not,
// in request order.
func (r Request) ToolNames() []string {
	var names []string
	for _, t := range r.Tools {
		if t.Type == "" {
			names = append(names, t.Name)
		}
	}
	return names
}

// DeferredNames returns the names of the tools sent with defer_loading.
func (r Request) DeferredNames() []string {
	var names []string
	for _, t := range r.Tools {
		if t.Type == "" && t.DeferLoading {
			names = append(names, t.Name)
		}
	}
	return names
}

// Loaded returns the custom tools the model can call: those sent without
// defer_loading, then the deferred ones a tool_reference in the
// conversation loaded, in the order they were loaded.
func (r Request) Loaded() []string {
	var names []string
	for _, t := range r.Tools {
		if t.Type == "" && !t.DeferLoading {
			names = append(names, t.Name)
		}
	}
	for _, m := range r.Messages {
		for _, f := range m.Found {
			if !slices.Contains(names, f) {
				names = append(names, f)
			}
		}
	}
	return names
}

// Server is a scripted Messages API endpoint. Its methods are safe for
// concurrent use.
type Server struct {
	// URL is the base URL to configure clients with (without /v1).
	URL string

	srv      *httptest.Server
	respond  func(Request) Reply
	requests scripted.Log[Request]

	mu    sync.Mutex
	cache map[[32]byte]bool // prefixes written at a breakpoint
}

// NewServer answers the n-th request with replies[n]; a request past the
// end of the script gets HTTP 500 "script exhausted".
func NewServer(replies ...Reply) *Server {
	return NewServerFunc(scripted.Sequence[Request](replies,
		Reply{Status: http.StatusInternalServerError, Content: "anthropictest: script exhausted"}))
}

// NewServerFunc answers each request with respond's reply.
func NewServerFunc(respond func(Request) Reply) *Server {
	s := &Server{respond: respond, cache: map[[32]byte]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", s.handle)
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	return s
}

// Close shuts the server down.
func (s *Server) Close() { s.srv.Close() }

// Requests returns the requests received so far, in order.
func (s *Server) Requests() []Request { return s.requests.All() }

// OfferedTools returns, for each request, the names of its custom tools.
func (s *Server) OfferedTools() [][]string {
	var out [][]string
	for _, r := range s.Requests() {
		out = append(out, r.ToolNames())
	}
	return out
}

// wire types of the Messages API, as much as the server reads.
type (
	wireRequest struct {
		Model      string            `json:"model"`
		MaxTokens  *int              `json:"max_tokens"`
		Stream     bool              `json:"stream"`
		System     json.RawMessage   `json:"system"`
		Messages   []wireMessage     `json:"messages"`
		Tools      []json.RawMessage `json:"tools"`
		MCPServers []struct {
			Type               string `json:"type"`
			Name               string `json:"name"`
			URL                string `json:"url"`
			AuthorizationToken string `json:"authorization_token"`
		} `json:"mcp_servers"`
	}
	wireMessage struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	wireBlock struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
		ToolUseID string          `json:"tool_use_id"`
		Content   json.RawMessage `json:"content"`
		ToolName  string          `json:"tool_name"`
	}
	wireTool struct {
		Type          string          `json:"type"`
		Name          string          `json:"name"`
		Description   string          `json:"description"`
		InputSchema   json.RawMessage `json:"input_schema"`
		DeferLoading  bool            `json:"defer_loading"`
		MCPServerName string          `json:"mcp_server_name"`
		DefaultConfig *struct {
			Enabled *bool `json:"enabled"`
		} `json:"default_config"`
		Configs map[string]struct {
			Enabled *bool `json:"enabled"`
		} `json:"configs"`
	}
)

// prefixPart is one block of the prompt prefix in the API's order (tools,
// system, messages), with its cache marker.
type prefixPart struct {
	path   string
	canon  []byte // the block without cache_control
	marked bool
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	var wr wireRequest
	if err := json.Unmarshal(body, &wr); err != nil {
		writeError(w, http.StatusBadRequest, "anthropictest: bad request body: "+err.Error())
		return
	}
	if wr.Model == "" || wr.MaxTokens == nil || len(wr.Messages) == 0 {
		writeError(w, http.StatusBadRequest, "anthropictest: model, max_tokens and messages are required")
		return
	}
	req := Request{Model: wr.Model, Stream: wr.Stream, Body: body}
	for _, h := range r.Header.Values("anthropic-beta") {
		for _, b := range strings.Split(h, ",") {
			if b = strings.TrimSpace(b); b != "" {
				req.Betas = append(req.Betas, b)
			}
		}
	}
	for _, m := range wr.MCPServers {
		req.MCPServers = append(req.MCPServers, MCPServer{Name: m.Name, URL: m.URL, HasToken: m.AuthorizationToken != ""})
	}
	var parts []prefixPart
	// A deferred tool is not in the prompt until a tool_reference loads
	// it: its definition counts where the reference is.
	deferredDefs := map[string][]byte{}
	add := func(path string, raw json.RawMessage) {
		canon, marked := stripCacheControl(raw)
		if marked {
			req.Breakpoints = append(req.Breakpoints, path)
		}
		var b wireBlock
		if json.Unmarshal(raw, &b) == nil && b.Type == "tool_result" {
			if _, refs, err := resultText(b.Content); err == nil {
				for _, ref := range refs {
					canon = append(canon, deferredDefs[ref]...)
				}
			}
		}
		parts = append(parts, prefixPart{path: path, canon: canon, marked: marked})
	}
	for i, raw := range wr.Tools {
		var t wireTool
		if err := json.Unmarshal(raw, &t); err != nil {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("anthropictest: tools[%d]: %v", i, err))
			return
		}
		tl := Tool{Type: t.Type, Name: t.Name, Description: t.Description, InputSchema: t.InputSchema,
			DeferLoading: t.DeferLoading, MCPServerName: t.MCPServerName}
		if t.Type == "custom" {
			tl.Type = ""
		}
		if t.DefaultConfig != nil {
			tl.DefaultEnabled = t.DefaultConfig.Enabled
		}
		for name, c := range t.Configs {
			if c.Enabled != nil && *c.Enabled {
				tl.EnabledTools = append(tl.EnabledTools, name)
			}
		}
		slices.Sort(tl.EnabledTools)
		req.Tools = append(req.Tools, tl)
		if t.DeferLoading {
			if _, marked := stripCacheControl(raw); marked {
				req.Breakpoints = append(req.Breakpoints, fmt.Sprintf("tools[%d]", i))
			}
			deferredDefs[t.Name], _ = stripCacheControl(raw)
			continue
		}
		add(fmt.Sprintf("tools[%d]", i), raw)
	}
	if sys := bytes.TrimSpace(wr.System); len(sys) > 0 && sys[0] == '[' {
		var blocks []json.RawMessage
		_ = json.Unmarshal(sys, &blocks)
		for i, raw := range blocks {
			var b wireBlock
			_ = json.Unmarshal(raw, &b)
			req.System = append(req.System, b.Text)
			add(fmt.Sprintf("system[%d]", i), raw)
		}
	} else if len(sys) > 0 {
		var text string
		_ = json.Unmarshal(sys, &text)
		req.System = append(req.System, text)
		parts = append(parts, prefixPart{path: "system", canon: sys})
	}
	deferred := map[string]bool{}
	for _, t := range req.Tools {
		if t.DeferLoading {
			deferred[t.Name] = true
		}
	}
	for i, m := range wr.Messages {
		blocks, err := contentBlocks(m.Content)
		if err != nil {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("anthropictest: messages[%d].content: %v", i, err))
			return
		}
		// A role change is part of the prefix.
		parts = append(parts, prefixPart{path: fmt.Sprintf("messages[%d]", i), canon: []byte(m.Role)})
		for j, raw := range blocks {
			add(fmt.Sprintf("messages[%d].content[%d]", i, j), raw)
		}
		msgs, err := fromWireMessage(m.Role, blocks, deferred)
		if err != nil {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("anthropictest: messages[%d]: %v", i, err))
			return
		}
		req.Messages = append(req.Messages, msgs...)
	}
	if len(req.Breakpoints) > 4 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("anthropictest: %d cache_control blocks, at most 4 allowed", len(req.Breakpoints)))
		return
	}
	usage := s.account(parts)

	reply := s.respond(req)
	if reply.Usage != nil {
		usage = *reply.Usage
	}
	usage.TotalTokens = usage.PromptTokens + usage.CompletionTokens
	req.Usage = usage
	n := s.requests.Add(req)

	if reply.Hang {
		<-r.Context().Done()
		return
	}
	if reply.Status != 0 {
		writeError(w, reply.Status, reply.Content)
		return
	}
	calls := append([]tool.ToolCall(nil), reply.ToolCalls...)
	for i := range calls {
		if calls[i].ID == "" {
			calls[i].ID = fmt.Sprintf("toolu_%d_%d", n, i)
		}
		if !json.Valid([]byte(calls[i].Arguments)) {
			writeError(w, http.StatusInternalServerError, fmt.Sprintf("anthropictest: script: call %s: arguments are not JSON", calls[i].Name))
			return
		}
	}
	stop := "end_turn"
	if len(calls) > 0 {
		stop = "tool_use"
	}
	id := fmt.Sprintf("msg_%d", n)
	if wr.Stream && !reply.NoStream {
		s.stream(w, id, wr.Model, reply, calls, stop, usage)
		return
	}
	var content []any
	if reply.Content != "" {
		content = append(content, map[string]any{"type": "text", "text": reply.Content})
	}
	for _, c := range calls {
		content = append(content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": json.RawMessage(c.Arguments)})
	}
	if content == nil {
		content = []any{}
	}
	scripted.WriteJSON(w, map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": wr.Model,
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": wireUsage(usage),
	})
}

// account applies the prompt cache to one request's prefix: the longest
// prefix ending at a breakpoint that an earlier request wrote is read from
// the cache, the prefix up to the last breakpoint is written, the rest is
// plain input. Tokens are bytes / 4.
func (s *Server) account(parts []prefixPart) Usage {
	h := sha256.New()
	total, read, upToLast := 0, 0, 0
	var marks [][32]byte
	for _, p := range parts {
		h.Write(p.canon)
		h.Write([]byte{0})
		total += len(p.canon)
		if p.marked {
			var sum [32]byte
			copy(sum[:], h.Sum(nil))
			s.mu.Lock()
			hit := s.cache[sum]
			s.mu.Unlock()
			if hit {
				read = total
			}
			upToLast = total
			marks = append(marks, sum)
		}
	}
	s.mu.Lock()
	for _, m := range marks {
		s.cache[m] = true
	}
	s.mu.Unlock()
	tok := func(b int) int { return (b + 3) / 4 }
	u := Usage{CompletionTokens: 1}
	u.CachedPromptTokens = tok(read)
	if upToLast > read {
		u.CacheWriteTokens = tok(upToLast) - tok(read)
	}
	u.PromptTokens = max(tok(total), u.CachedPromptTokens+u.CacheWriteTokens)
	return u
}

// stripCacheControl returns a block without its cache_control, compacted,
// and whether it had one.
func stripCacheControl(raw json.RawMessage) ([]byte, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		var b bytes.Buffer
		_ = json.Compact(&b, raw)
		return b.Bytes(), false
	}
	_, marked := m["cache_control"]
	delete(m, "cache_control")
	b, _ := json.Marshal(m) // sorted keys: canonical
	return b, marked
}

// contentBlocks returns a message's content as blocks: a string is one text
// block.
func contentBlocks(raw json.RawMessage) ([]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var text string
		if err := json.Unmarshal(raw, &text); err != nil {
			return nil, err
		}
		b, _ := json.Marshal(map[string]string{"type": "text", "text": text})
		return []json.RawMessage{b}, nil
	}
	var blocks []json.RawMessage
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, err
	}
	if len(blocks) == 0 {
		return nil, fmt.Errorf("empty content")
	}
	return blocks, nil
}

// fromWireMessage converts one turn to the agent's messages: a user turn's
// tool_result blocks become tool messages (the tools its tool_reference
// blocks load are the message's Found; as the API does, a reference to a
// tool that is not deferred in the request is an error), its text a user
// message; an assistant turn's text and tool_use blocks one assistant
// message.
func fromWireMessage(role string, blocks []json.RawMessage, deferred map[string]bool) ([]tool.Message, error) {
	var out []tool.Message
	var asst tool.Message
	for j, raw := range blocks {
		var b wireBlock
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, fmt.Errorf("content[%d]: %w", j, err)
		}
		switch {
		case role == "assistant" && b.Type == "text":
			asst.Content += b.Text
		case role == "assistant" && b.Type == "tool_use":
			if len(b.Input) == 0 || b.Input[0] != '{' {
				return nil, fmt.Errorf("content[%d]: tool_use input is not an object", j)
			}
			asst.ToolCalls = append(asst.ToolCalls, tool.ToolCall{ID: b.ID, Name: b.Name, Arguments: string(b.Input)})
		case role == "user" && b.Type == "text":
			if strings.TrimSpace(b.Text) == "" {
				return nil, fmt.Errorf("content[%d]: text content blocks must be non-empty", j)
			}
			out = append(out, tool.Message{Role: tool.RoleUser, Content: b.Text})
		case role == "user" && b.Type == "tool_result":
			text, refs, err := resultText(b.Content)
			if err != nil {
				return nil, fmt.Errorf("content[%d]: %w", j, err)
			}
			for _, ref := range refs {
				if !deferred[ref] {
					return nil, fmt.Errorf("content[%d]: tool_reference to %q, which is not a deferred tool of the request", j, ref)
				}
			}
			out = append(out, tool.Message{Role: tool.RoleTool, ToolCallID: b.ToolUseID, Content: text, Found: refs})
		default:
			return nil, fmt.Errorf("content[%d]: unexpected %q block in a %s turn", j, b.Type, role)
		}
	}
	if role == "assistant" {
		asst.Role = tool.RoleAssistant
		out = append(out, asst)
	}
	return out, nil
}

// resultText returns a tool_result's text and the tools its tool_reference
// blocks name.
func resultText(raw json.RawMessage) (string, []string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", nil, nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, nil, err
	}
	var blocks []wireBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", nil, err
	}
	var parts, refs []string
	for _, b := range blocks {
		switch b.Type {
		case "text":
			parts = append(parts, b.Text)
		case "tool_reference":
			if b.ToolName == "" {
				return "", nil, errors.New("tool_reference without tool_name")
			}
			refs = append(refs, b.ToolName)
		default:
			return "", nil, fmt.Errorf("unexpected %q block in a tool_result", b.Type)
		}
	}
	return strings.Join(parts, "\n"), refs, nil
}

func (s *Server) stream(w http.ResponseWriter, id, model string, reply Reply, calls []tool.ToolCall, stop string, usage Usage) {
	size := reply.ChunkSize
	sse := scripted.StartSSE(w)
	send := func(event string, data map[string]any) {
		data["type"] = event
		sse.Send(event, data)
	}
	start := wireUsage(usage)
	start["output_tokens"] = 1
	send("message_start", map[string]any{"message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": start,
	}})
	idx := 0
	if reply.Content != "" {
		send("content_block_start", map[string]any{"index": idx, "content_block": map[string]any{"type": "text", "text": ""}})
		for _, part := range scripted.Split(reply.Content, size) {
			send("content_block_delta", map[string]any{"index": idx, "delta": map[string]any{"type": "text_delta", "text": part}})
		}
		send("content_block_stop", map[string]any{"index": idx})
		idx++
	}
	for _, c := range calls {
		send("content_block_start", map[string]any{"index": idx, "content_block": map[string]any{
			"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}}})
		for _, part := range scripted.Split(c.Arguments, size) {
			send("content_block_delta", map[string]any{"index": idx, "delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
		}
		send("content_block_stop", map[string]any{"index": idx})
		idx++
	}
	send("message_delta", map[string]any{
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": usage.CompletionTokens},
	})
	send("message_stop", map[string]any{})
}

// wireUsage reports u as the API does: input_tokens excludes the cached
// and cache-written tokens.
func wireUsage(u Usage) map[string]any {
	return map[string]any{
		"input_tokens":                u.PromptTokens - u.CachedPromptTokens - u.CacheWriteTokens,
		"cache_read_input_tokens":     u.CachedPromptTokens,
		"cache_creation_input_tokens": u.CacheWriteTokens,
		"output_tokens":               u.CompletionTokens,
	}
}

func writeError(w http.ResponseWriter, status int, msg string) {
	typ := "api_error"
	switch {
	case status == http.StatusBadRequest:
		typ = "invalid_request_error"
	case status == http.StatusUnauthorized:
		typ = "authentication_error"
	case status == http.StatusTooManyRequests:
		typ = "rate_limit_error"
	}
	scripted.WriteJSONStatus(w, status, map[string]any{
		"type":  "error",
		"error": map[string]any{"type": typ, "message": msg},
	})
}

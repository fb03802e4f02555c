// Package agenttest provides scripted Chat Completions (Server) and
// Responses API (ResponsesServer) endpoints for the tests of agent,
// agent/openaimodel and the commands built on them: httptest servers that speak the real wire formats (JSON, and
// server-sent events when the request asks to stream, unless a Reply says
// NoStream, as a server that does not stream answers), answer with the
// replies of a script and record every request, so a test can assert
// which tools were offered at each step.
//
//	srv := agenttest.NewServer(
//		agenttest.Reply{ToolCalls: []tool.ToolCall{{Name: "echo", Arguments: `{"text":"hi"}`}}},
//		agenttest.Reply{Content: "done"},
//	)
//	defer srv.Close()
//	model, _ := openaimodel.NewChat("test-model", &openaimodel.ChatOptions{Options: provider.Options{BaseURL: srv.URL, APIKey: "test"}})
package agenttest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/toolsift/toolsift/internal/scripted"
	"github.com/toolsift/toolsift/tool"
)

// Reply is one scripted answer.
type Reply struct {
	// Content of the assistant message.
	Content string
	// ToolCalls requested by the assistant. An empty ID becomes "call_<n>".
	// Arguments are sent verbatim, valid JSON or not. On a ResponsesServer
	// a call with Search set is a tool_search_call (client execution)
	// whose arguments are the JSON object in Arguments.
	ToolCalls []tool.ToolCall
	// Hosted are calls the provider made itself (ResponsesServer only:
	// mcp_call items before the message). An empty ID gets one.
	Hosted []tool.HostedCall
	// Usage to report; nil reports PromptTokens = request bytes / 4.
	Usage *Usage

	// ChunkSize is the number of bytes of content or of tool-call arguments
	// per streamed delta; zero means 3, which splits JSON mid-token.
	ChunkSize int
	// Interleave streams the argument deltas of parallel tool calls round
	// robin instead of one call after the other.
	Interleave bool
	// NoStream answers with one JSON body even when the request asks to
	// stream, as a server that does not stream does.
	NoStream bool

	// Status, when not zero, answers with this HTTP status and an OpenAI
	// error body instead of a completion.
	Status int
	// Hang blocks until the client gives up (its context ends).
	Hang bool
}

// Usage is the token accounting the servers report.
type Usage = scripted.Usage

// ToolDef is one function tool of a recorded request, as the wire gave it.
type ToolDef struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// Request is one recorded request, decoded from the wire.
type Request struct {
	Model    string
	Stream   bool
	Messages []tool.Message
	Tools    []ToolDef
	// Body is the raw request body.
	Body json.RawMessage
}

// ToolNames returns the names of the tools offered, in request order.
func (r Request) ToolNames() []string {
	names := make([]string, len(r.Tools))
	for i, t := range r.Tools {
		names[i] = t.Name
	}
	return names
}

// Server is a scripted Chat Completions endpoint. Its methods are safe for
// concurrent use.
type Server struct {
	// URL is the base URL to configure clients with (it ends in /v1).
	URL string

	srv      *httptest.Server
	respond  func(Request) Reply
	requests scripted.Log[Request]
}

// NewServer answers the n-th request with replies[n]; a request past the end
// of the script gets HTTP 500 "script exhausted".
func NewServer(replies ...Reply) *Server {
	return NewServerFunc(scripted.Sequence[Request](replies, exhausted))
}

// exhausted answers a request past the end of a script.
var exhausted = Reply{Status: http.StatusInternalServerError, Content: "agenttest: script exhausted"}

// NewServerFunc answers each request with respond's reply.
func NewServerFunc(respond func(Request) Reply) *Server {
	s := &Server{respond: respond}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.handle)
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL + "/v1"
	return s
}

// Close shuts the server down.
func (s *Server) Close() { s.srv.Close() }

// Requests returns the requests received so far, in order.
func (s *Server) Requests() []Request { return s.requests.All() }

// OfferedTools returns, for each request received, the names of the tools
// offered in it.
func (s *Server) OfferedTools() [][]string {
	var out [][]string
	for _, r := range s.Requests() {
		out = append(out, r.ToolNames())
	}
	return out
}

// wire types of the Chat Completions API.
type (
	wireRequest struct {
		Model         string        `json:"model"`
		Stream        bool          `json:"stream"`
		Messages      []wireMessage `json:"messages"`
		Tools         []wireTool    `json:"tools"`
		StreamOptions *struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	wireMessage struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content,omitempty"`
		ToolCalls  []wireToolCall  `json:"tool_calls,omitempty"`
		ToolCallID string          `json:"tool_call_id,omitempty"`
	}
	wireToolCall struct {
		Index    *int   `json:"index,omitempty"`
		ID       string `json:"id,omitempty"`
		Type     string `json:"type,omitempty"`
		Function struct {
			Name      string `json:"name,omitempty"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	wireTool struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
)

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	var wr wireRequest
	if err := json.Unmarshal(body, &wr); err != nil {
		writeError(w, http.StatusBadRequest, "agenttest: bad request body: "+err.Error())
		return
	}
	req := Request{Model: wr.Model, Stream: wr.Stream, Body: body}
	for _, m := range wr.Messages {
		req.Messages = append(req.Messages, fromWireMessage(m))
	}
	for _, t := range wr.Tools {
		req.Tools = append(req.Tools, ToolDef{
			Name:        t.Function.Name,
			Description: t.Function.Description,
			Parameters:  t.Function.Parameters,
		})
	}
	n := s.requests.Add(req)

	reply := s.respond(req)
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
			calls[i].ID = fmt.Sprintf("call_%d_%d", n, i)
		}
	}
	usage := Usage{PromptTokens: len(body) / 4, CompletionTokens: 1}
	if reply.Usage != nil {
		usage = *reply.Usage
	}
	usage.TotalTokens = usage.PromptTokens + usage.CompletionTokens
	finish := "stop"
	if len(calls) > 0 {
		finish = "tool_calls"
	}
	id := fmt.Sprintf("chatcmpl-%d", n)
	if wr.Stream && !reply.NoStream {
		includeUsage := wr.StreamOptions != nil && wr.StreamOptions.IncludeUsage
		s.stream(w, id, wr.Model, reply, calls, finish, usage, includeUsage)
		return
	}
	msg := map[string]any{"role": "assistant", "content": nil}
	if reply.Content != "" {
		msg["content"] = reply.Content
	}
	if len(calls) > 0 {
		var wc []wireToolCall
		for _, c := range calls {
			var x wireToolCall
			x.ID, x.Type = c.ID, "function"
			x.Function.Name, x.Function.Arguments = c.Name, c.Arguments
			wc = append(wc, x)
		}
		msg["tool_calls"] = wc
	}
	scripted.WriteJSON(w, map[string]any{
		"id":      id,
		"object":  "chat.completion",
		"created": time.Now().Unix(),
		"model":   wr.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish, "logprobs": nil}},
		"usage":   wireUsage(usage),
	})
}

func (s *Server) stream(w http.ResponseWriter, id, model string, reply Reply, calls []tool.ToolCall, finish string, usage Usage, includeUsage bool) {
	size := reply.ChunkSize
	sse := scripted.StartSSE(w)
	created := time.Now().Unix()
	send := func(delta map[string]any, finishReason any, withUsage bool) {
		chunk := map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{},
		}
		if delta != nil {
			chunk["choices"] = []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finishReason, "logprobs": nil}}
		}
		if withUsage {
			chunk["usage"] = wireUsage(usage)
		} else if includeUsage {
			chunk["usage"] = nil
		}
		sse.Send("", chunk)
	}
	send(map[string]any{"role": "assistant", "content": ""}, nil, false)
	for _, part := range scripted.Split(reply.Content, size) {
		send(map[string]any{"content": part}, nil, false)
	}
	// The first delta of each call carries its id and name; the arguments
	// follow in fragments.
	frags := make([][]string, len(calls))
	for i, c := range calls {
		frags[i] = scripted.Split(c.Arguments, size)
	}
	toolDelta := func(i int, first bool, args string) map[string]any {
		tc := map[string]any{"index": i, "function": map[string]any{"arguments": args}}
		if first {
			tc["id"], tc["type"] = calls[i].ID, "function"
			tc["function"].(map[string]any)["name"] = calls[i].Name
		}
		return map[string]any{"tool_calls": []any{tc}}
	}
	if reply.Interleave {
		for i := range calls {
			send(toolDelta(i, true, ""), nil, false)
		}
		for more := true; more; {
			more = false
			for i := range calls {
				if len(frags[i]) > 0 {
					send(toolDelta(i, false, frags[i][0]), nil, false)
					frags[i] = frags[i][1:]
					more = true
				}
			}
		}
	} else {
		for i := range calls {
			send(toolDelta(i, true, ""), nil, false)
			for _, f := range frags[i] {
				send(toolDelta(i, false, f), nil, false)
			}
		}
	}
	send(map[string]any{}, finish, false)
	if includeUsage {
		send(nil, nil, true)
	}
	sse.SendRaw("", "[DONE]")
}

func fromWireMessage(m wireMessage) tool.Message {
	msg := tool.Message{Role: tool.Role(m.Role), ToolCallID: m.ToolCallID}
	content := bytes.TrimSpace(m.Content)
	switch {
	case len(content) == 0 || bytes.Equal(content, []byte("null")):
	case content[0] == '"':
		_ = json.Unmarshal(content, &msg.Content)
	default: // an array of content parts
		var parts []struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(content, &parts)
		for _, p := range parts {
			msg.Content += p.Text
		}
	}
	for _, c := range m.ToolCalls {
		msg.ToolCalls = append(msg.ToolCalls, tool.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
	}
	return msg
}

func wireUsage(u Usage) map[string]any {
	return map[string]any{"prompt_tokens": u.PromptTokens, "completion_tokens": u.CompletionTokens, "total_tokens": u.TotalTokens}
}

func writeError(w http.ResponseWriter, status int, msg string) {
	scripted.WriteJSONStatus(w, status, map[string]any{
		"error": map[string]any{"message": msg, "type": "invalid_request_error", "param": nil, "code": nil},
	})
}

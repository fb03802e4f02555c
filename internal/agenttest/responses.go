package agenttest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/toolsift/toolsift/internal/scripted"
)

// ResponsesServer is a scripted endpoint of OpenAI's Responses API
// (POST /v1/responses): it answers with the replies of a script, as a JSON
// Response or, when the request asks to stream, as the API's server-sent
// events (response.created, output items with their text and argument
// deltas, response.completed), and records every request. A Reply's
// ToolCalls with Search set become tool_search_call items (client
// execution) and its Hosted calls mcp_call items. Its methods are safe for
// concurrent use.
//
//	srv := agenttest.NewResponsesServer(
//		agenttest.Reply{ToolCalls: []tool.ToolCall{{Search: true, Arguments: `{"query":"sum"}`}}},
//		agenttest.Reply{Content: "done"},
//	)
//	defer srv.Close()
//	model, _ := openaimodel.NewResponses("test-model", &openaimodel.ResponsesOptions{Options: provider.Options{BaseURL: srv.URL, APIKey: "test"}})
type ResponsesServer struct {
	// URL is the base URL to configure clients with (it ends in /v1).
	URL string

	srv      *httptest.Server
	respond  func(ResponsesRequest) Reply
	requests scripted.Log[ResponsesRequest]
}

// ResponsesRequest is one recorded request, decoded from the wire.
type ResponsesRequest struct {
	Model  string
	Stream bool
	// Store is the request's store flag; nil when it sent none.
	Store *bool
	// Tools are the request's tools, in order.
	Tools []ResponsesTool
	// Input are the request's input items, in order.
	Input []ResponsesItem
	// Body is the raw request body.
	Body json.RawMessage
}

// ResponsesTool is one tool of a request: a function (deferred or not),
// the tool_search tool or a hosted MCP server (mcp).
type ResponsesTool struct {
	Type         string          `json:"type"`
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	Parameters   json.RawMessage `json:"parameters"`
	Strict       *bool           `json:"strict"`
	DeferLoading bool            `json:"defer_loading"`
	// Execution of a tool_search tool: "client" or "server".
	Execution string `json:"execution"`
	// The mcp tool's fields.
	ServerLabel     string            `json:"server_label"`
	ServerURL       string            `json:"server_url"`
	AllowedTools    []string          `json:"allowed_tools"`
	Headers         map[string]string `json:"headers"`
	RequireApproval json.RawMessage   `json:"require_approval"`
}

// ResponsesItem is one input item of a request: a message (Role, Text), a
// function_call or function_call_output, a tool_search_call (Arguments is
// an object) or tool_search_output (Tools), an mcp_call.
type ResponsesItem struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	Role string `json:"role"`
	// Content is the message's content as sent; Text its text.
	Content     json.RawMessage `json:"content"`
	Text        string          `json:"-"`
	CallID      string          `json:"call_id"`
	Name        string          `json:"name"`
	Arguments   json.RawMessage `json:"arguments"`
	Output      json.RawMessage `json:"output"`
	Execution   string          `json:"execution"`
	Tools       []ResponsesTool `json:"tools"`
	ServerLabel string          `json:"server_label"`
}

// ToolNames returns the names of the function tools sent loaded (not
// deferred), in request order, with "tool_search" for the search tool and
// "mcp:<label>" for a hosted server.
func (r ResponsesRequest) ToolNames() []string {
	var out []string
	for _, t := range r.Tools {
		switch {
		case t.Type == "tool_search":
			out = append(out, "tool_search")
		case t.Type == "mcp":
			out = append(out, "mcp:"+t.ServerLabel)
		case !t.DeferLoading:
			out = append(out, t.Name)
		}
	}
	return out
}

// DeferredNames returns the names of the function tools sent with
// defer_loading, in request order.
func (r ResponsesRequest) DeferredNames() []string {
	var out []string
	for _, t := range r.Tools {
		if t.Type == "function" && t.DeferLoading {
			out = append(out, t.Name)
		}
	}
	return out
}

// NewResponsesServer answers the n-th request with replies[n]; a request
// past the end of the script gets HTTP 500 "script exhausted".
func NewResponsesServer(replies ...Reply) *ResponsesServer {
	return NewResponsesServerFunc(scripted.Sequence[ResponsesRequest](replies, exhausted))
}

// NewResponsesServerFunc answers each request with respond's reply.
func NewResponsesServerFunc(respond func(ResponsesRequest) Reply) *ResponsesServer {
	s := &ResponsesServer{respond: respond}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/responses", s.handle)
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL + "/v1"
	return s
}

// Close shuts the server down.
func (s *ResponsesServer) Close() { s.srv.Close() }

// Requests returns the requests received so far, in order.
func (s *ResponsesServer) Requests() []ResponsesRequest { return s.requests.All() }

func (s *ResponsesServer) handle(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	var wr struct {
		Model  string          `json:"model"`
		Stream bool            `json:"stream"`
		Store  *bool           `json:"store"`
		Input  json.RawMessage `json:"input"`
		Tools  []ResponsesTool `json:"tools"`
	}
	if err := json.Unmarshal(body, &wr); err != nil {
		writeError(w, http.StatusBadRequest, "agenttest: bad request body: "+err.Error())
		return
	}
	req := ResponsesRequest{Model: wr.Model, Stream: wr.Stream, Store: wr.Store, Tools: wr.Tools, Body: body}
	var text string
	if json.Unmarshal(wr.Input, &text) == nil {
		req.Input = []ResponsesItem{{Type: "message", Role: "user", Text: text}}
	} else if err := json.Unmarshal(wr.Input, &req.Input); err != nil {
		writeError(w, http.StatusBadRequest, "agenttest: bad input: "+err.Error())
		return
	}
	for i, it := range req.Input {
		if it.Type == "" && it.Role != "" {
			req.Input[i].Type = "message"
		}
		req.Input[i].Text = contentText(it.Content)
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
	items := replyItems(n, reply)
	usage := Usage{PromptTokens: len(body) / 4, CompletionTokens: 1}
	if reply.Usage != nil {
		usage = *reply.Usage
	}
	usage.TotalTokens = usage.PromptTokens + usage.CompletionTokens
	resp := map[string]any{
		"id": fmt.Sprintf("resp_%d", n), "object": "response", "created_at": time.Now().Unix(),
		"status": "completed", "model": wr.Model, "output": items, "error": nil, "incomplete_details": nil,
		"parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{}, "temperature": 1, "top_p": 1,
		"usage": map[string]any{
			"input_tokens": usage.PromptTokens, "input_tokens_details": map[string]any{"cached_tokens": usage.CachedPromptTokens},
			"output_tokens": usage.CompletionTokens, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
			"total_tokens": usage.TotalTokens,
		},
	}
	if !wr.Stream || reply.NoStream {
		scripted.WriteJSON(w, resp)
		return
	}
	s.stream(w, reply, items, resp)
}

// contentText is a message content's text: a string, or the text of its
// parts.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	for _, p := range parts {
		s += p.Text
	}
	return s
}

// replyItems are a reply's output items: hosted calls, the message, the
// tool calls.
func replyItems(n int, reply Reply) []map[string]any {
	var items []map[string]any
	for i, h := range reply.Hosted {
		id := h.ID
		if id == "" {
			id = fmt.Sprintf("mcp_%d_%d", n, i)
		}
		it := map[string]any{"type": "mcp_call", "id": id, "server_label": h.Server, "name": h.Name,
			"arguments": h.Arguments, "output": h.Output, "error": nil, "status": "completed"}
		if h.Error != "" {
			it["error"], it["output"] = h.Error, nil
		}
		items = append(items, it)
	}
	if reply.Content != "" {
		items = append(items, map[string]any{"type": "message", "id": fmt.Sprintf("msg_%d", n), "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": reply.Content, "annotations": []any{}}}})
	}
	for i, c := range reply.ToolCalls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", n, i)
		}
		if c.Search {
			var args any = map[string]any{}
			if json.Valid([]byte(c.Arguments)) {
				args = json.RawMessage(c.Arguments)
			}
			items = append(items, map[string]any{"type": "tool_search_call", "id": fmt.Sprintf("ts_%d_%d", n, i), "call_id": id,
				"arguments": args, "execution": "client", "status": "completed"})
			continue
		}
		items = append(items, map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d_%d", n, i), "call_id": id,
			"name": c.Name, "arguments": c.Arguments, "status": "completed"})
	}
	return items
}

func (s *ResponsesServer) stream(w http.ResponseWriter, reply Reply, items []map[string]any, resp map[string]any) {
	size := reply.ChunkSize
	sse := scripted.StartSSE(w)
	seq := 0
	send := func(typ string, ev map[string]any) {
		ev["type"], ev["sequence_number"] = typ, seq
		seq++
		sse.Send(typ, ev)
	}
	started := map[string]any{}
	for k, v := range resp {
		started[k] = v
	}
	started["status"], started["output"], started["usage"] = "in_progress", []any{}, nil
	send("response.created", map[string]any{"response": started})
	for i, it := range items {
		id := it["id"]
		added := map[string]any{}
		for k, v := range it {
			added[k] = v
		}
		added["status"] = "in_progress"
		switch it["type"] {
		case "message":
			added["content"] = []any{}
		case "function_call":
			added["arguments"] = ""
		}
		send("response.output_item.added", map[string]any{"output_index": i, "item": added})
		switch it["type"] {
		case "message":
			text := reply.Content
			send("response.content_part.added", map[string]any{"item_id": id, "output_index": i, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
			for _, part := range scripted.Split(text, size) {
				send("response.output_text.delta", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "delta": part, "logprobs": []any{}})
			}
			send("response.output_text.done", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "text": text, "logprobs": []any{}})
			send("response.content_part.done", map[string]any{"item_id": id, "output_index": i, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": text, "annotations": []any{}}})
		case "function_call":
			args, _ := it["arguments"].(string)
			for _, part := range scripted.Split(args, size) {
				send("response.function_call_arguments.delta", map[string]any{"item_id": id, "output_index": i, "delta": part})
			}
			send("response.function_call_arguments.done", map[string]any{"item_id": id, "output_index": i, "arguments": args, "name": it["name"]})
		}
		send("response.output_item.done", map[string]any{"output_index": i, "item": it})
	}
	send("response.completed", map[string]any{"response": resp})
}

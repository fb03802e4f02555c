package upstream

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift/tool"
)

// Call calls the tool with the given qualified name (see Tools) with args,
// a JSON object (nil or empty means {}). A tool's own failure is a Result
// with IsError set, not an error. The error wraps tool.ErrUnknown (a tool
// not listed, or ErrToolDisabled), tool.ErrUnavailable (its server cannot
// take the call), tool.ErrInvalidArguments, ErrClosed or ctx's error, and
// names the tool and server. Under WithServerScope or WithToolScope, a tool
// out of scope is tool.ErrUnknown.
//
// The call is bounded by ctx and, when the server's config sets one, its
// Timeout. A call to a lazy server starts it first (see HubOptions.Start),
// bounded by ctx and its connection timeout. A stdio server that has not
// taken the call's arguments from its stdin by then is killed and
// restarted, and the error wraps tool.ErrUnavailable.
func (h *Hub) Call(ctx context.Context, name string, args json.RawMessage) (tool.Result, error) {
	res, err := h.call(ctx, name, args)
	return res, h.redact.Err(err)
}

func (h *Hub) call(ctx context.Context, name string, args json.RawMessage) (tool.Result, error) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return tool.Result{}, fmt.Errorf("call %s: %w", name, ErrClosed)
	}
	s, ok := h.routes[name]
	if !ok || !inScope(ctx)(s.name) { // out of scope: as unknown as a tool no server has (scope.go)
		h.mu.Unlock()
		return tool.Result{}, fmt.Errorf("%w: %q", errUnknownTool, name)
	}
	if in := toolScope(ctx); in != nil && !in(ToolRoute{Server: s.name, Tool: name, Changed: s.changedOf(name)}) {
		h.mu.Unlock()
		return tool.Result{}, fmt.Errorf("%w: %q", errUnknownTool, name)
	}
	if orig, ok := s.disabled[name]; ok {
		h.mu.Unlock()
		return tool.Result{}, fmt.Errorf("%w: %s (tool %q of server %s is filtered out by its config)", ErrToolDisabled, name, orig, s.name)
	}
	orig := s.originals[name]
	defer s.using()() // no idle stop while the call is in progress
	cs, att, state, why := s.session, s.att, s.state, s.err
	h.mu.Unlock()
	args, err := tool.ObjectArgs(args) // before a lazy server starts for nothing
	if err != nil {
		return tool.Result{}, fmt.Errorf("%w: call %s (server %s): %w", errInvalidArguments, name, s.name, err)
	}

	if state == StateLazy || state == StateConnecting {
		if cs, orig, state, why, err = s.wake(ctx, name); err != nil {
			return tool.Result{}, err
		}
		h.mu.Lock()
		att = s.att // the attempt that just started it
		h.mu.Unlock()
	}

	if cs == nil || state != StateReady {
		if why != nil {
			return tool.Result{}, fmt.Errorf("%w: call %s: server %s is %s: %w", errServerUnavailable, name, s.name, state, why)
		}
		return tool.Result{}, fmt.Errorf("%w: call %s: server %s is %s", errServerUnavailable, name, s.name, state)
	}
	if s.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.Timeout)
		defer cancel()
	}
	// Close does not wait for calls in flight: it ends them.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer context.AfterFunc(h.life, func() { cancel(ErrClosed) })()
	params := &mcp.CallToolParams{Name: orig, Arguments: args}
	passed, err := passRound(ctx, cs, params) // multi round-trips the caller makes; roundtrip.go
	if err != nil {
		return tool.Result{}, fmt.Errorf("call %s (server %s): %w", name, s.name, err)
	}
	ctx, end := h.pt.calls.begin(ctx, s, name, params) // progress, logs, server requests; see passthrough_call.go
	defer end()
	ctx, status := withHTTPStatus(ctx)
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		err = status.explain("tools/call", err)
		switch {
		case h.life.Err() != nil:
			return tool.Result{}, fmt.Errorf("call %s (server %s): %w", name, s.name, ErrClosed)
		case att.wedged():
			// The server stopped reading its input: it was killed and
			// is being restarted.
			return tool.Result{}, fmt.Errorf("%w: call %s: server %s is unavailable: %w (%w)", errServerUnavailable, name, s.name, errWedged, context.Cause(ctx))
		case ctx.Err() != nil:
			return tool.Result{}, fmt.Errorf("call %s (server %s): %w", name, s.name, context.Cause(ctx))
		}
		var rpcErr *jsonrpc.Error
		if passed && errors.As(err, &rpcErr) && rpcErr.Code != codeRejected {
			// A caller that makes the rounds passes protocol errors on.
			return tool.Result{}, fmt.Errorf("call %s (server %s): %w", name, s.name, &RPCError{Code: rpcErr.Code, Message: rpcErr.Message, Data: rpcErr.Data})
		}
		if errors.As(err, &rpcErr) && rpcErr.Code != codeRejected {
			// The server answered, with an error instead of a result
			// (unknown arguments, a thrown exception): data for the model.
			// A JSON-RPC error in the body of an HTTP error keeps its status.
			text := "error: " + rpcErr.Message
			if f := status.failure(); f != nil {
				text = fmt.Sprintf("error: HTTP %d %s: %s", f.status, http.StatusText(f.status), rpcErr.Message)
			}
			return render(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: true}), nil
		}
		return tool.Result{}, fmt.Errorf("%w: call %s (server %s): %w", errServerUnavailable, name, s.name, err)
	}
	h.pt.noteLinks(s, res) // resources.go
	return render(res), nil
}

// render turns an MCP tool result into a Result.
func render(res *mcp.CallToolResult) tool.Result {
	out := tool.Result{IsError: res.IsError}
	var parts []string
	var texts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
			texts = append(texts, c.Text)
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image: %s, %s]", orUnknown(c.MIMEType), size(len(c.Data))))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio: %s, %s]", orUnknown(c.MIMEType), size(len(c.Data))))
		case *mcp.ResourceLink:
			desc := []string{"resource link: " + c.URI}
			if c.Name != "" {
				desc = append(desc, "name "+c.Name)
			}
			if c.MIMEType != "" {
				desc = append(desc, c.MIMEType)
			}
			if c.Size != nil {
				desc = append(desc, size(int(*c.Size)))
			}
			parts = append(parts, "["+strings.Join(desc, ", ")+"]")
		case *mcp.EmbeddedResource:
			r := c.Resource
			if r == nil {
				parts = append(parts, "[resource]")
				continue
			}
			if r.Blob != nil {
				parts = append(parts, fmt.Sprintf("[resource: %s, %s, %s]", r.URI, orUnknown(r.MIMEType), size(len(r.Blob))))
				continue
			}
			// A text resource is content the model can read.
			parts = append(parts, fmt.Sprintf("[resource: %s, %s, %s]\n%s", r.URI, orUnknown(r.MIMEType), size(len(r.Text)), r.Text))
		default:
			b, _ := json.Marshal(c)
			parts = append(parts, fmt.Sprintf("[content: %s]", summariseJSON(b)))
		}
	}
	if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			out.Structured = b
			if !textCarries(texts, b) {
				parts = append(parts, string(b))
			}
		}
	}
	out.Content = strings.Join(parts, "\n")
	out.Raw = resultJSON(res)
	return out
}

// textCarries reports whether one of the text blocks is the same JSON value
// as structured (servers often send both, for older clients).
func textCarries(texts []string, structured []byte) bool {
	want := canonical(structured)
	for _, t := range texts {
		if want != "" && canonical([]byte(t)) == want {
			return true
		}
	}
	return false
}

func canonical(b []byte) string {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return ""
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// summariseJSON keeps an unknown content block readable without dumping
// large base64 fields.
func summariseJSON(b []byte) string {
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return fmt.Sprintf("%d bytes", len(b))
	}
	for k, v := range m {
		if s, ok := v.(string); ok && len(s) > 256 {
			if _, err := base64.StdEncoding.DecodeString(s); err == nil {
				m[k] = fmt.Sprintf("<%s>", size(len(s)*3/4))
			} else {
				m[k] = s[:256] + "…"
			}
		}
	}
	out, _ := json.Marshal(m)
	return string(out)
}

func size(n int) string {
	if n == 1 {
		return "1 byte"
	}
	return fmt.Sprintf("%d bytes", n)
}

func orUnknown(mime string) string {
	if mime == "" {
		return "unknown type"
	}
	return mime
}

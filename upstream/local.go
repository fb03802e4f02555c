package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/tool"
)

// LocalTool is a plain Go function served as a tool.
type LocalTool struct {
	Name        string
	Title       string
	Description string
	// InputSchema is a JSON Schema with "type": "object"; nil means any
	// object.
	InputSchema json.RawMessage
	Annotations *tool.Annotations
	// Handler gets the call's arguments (a JSON object) and returns the
	// text for the model. An error is the tool's own failure: the caller
	// gets it as a Result with IsError set. It must be safe for concurrent
	// use.
	Handler func(ctx context.Context, args json.RawMessage) (string, error)
}

// LocalServer returns a server config that serves tools from this process
// over an in-memory MCP connection (its Dial), so local and remote tools
// share one Hub: the same names, change events, call path and result
// rendering. Add it to config.Config.Servers under the name its tools
// should be qualified with. An invalid tool is an error wrapping
// config.ErrInvalid.
func LocalServer(tools ...LocalTool) (config.Server, error) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "toolsift-local", Version: "0.1.0"}, nil)
	seen := map[string]bool{}
	for _, lt := range tools {
		if lt.Name == "" {
			return config.Server{}, fmt.Errorf("%w: local tool with an empty name", config.ErrInvalid)
		}
		if seen[lt.Name] {
			return config.Server{}, fmt.Errorf("%w: local tool %q defined twice", config.ErrInvalid, lt.Name)
		}
		seen[lt.Name] = true
		if lt.Handler == nil {
			return config.Server{}, fmt.Errorf("%w: local tool %q has no Handler", config.ErrInvalid, lt.Name)
		}
		schema := lt.InputSchema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		var obj struct {
			Type any `json:"type"`
		}
		if err := json.Unmarshal(schema, &obj); err != nil || obj.Type != "object" {
			return config.Server{}, fmt.Errorf(`%w: local tool %q: InputSchema must be a JSON object with "type": "object"`, config.ErrInvalid, lt.Name)
		}
		t := &mcp.Tool{Name: lt.Name, Title: lt.Title, Description: lt.Description, InputSchema: schema}
		if a := lt.Annotations; a != nil {
			t.Annotations = &mcp.ToolAnnotations{
				DestructiveHint: a.DestructiveHint,
				OpenWorldHint:   a.OpenWorldHint,
				ReadOnlyHint:    a.ReadOnlyHint != nil && *a.ReadOnlyHint,
				IdempotentHint:  a.IdempotentHint != nil && *a.IdempotentHint,
			}
		}
		handler := lt.Handler
		srv.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
			defer func() {
				if p := recover(); p != nil {
					res, err = errorResult(fmt.Sprintf("tool %s panicked: %v", t.Name, p)), nil
				}
			}()
			args := req.Params.Arguments
			if len(args) == 0 {
				args = json.RawMessage("{}")
			}
			text, herr := handler(ctx, args)
			if herr != nil {
				return errorResult(herr.Error()), nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
		})
	}
	return config.Server{Dial: func(ctx context.Context) (io.ReadWriteCloser, error) {
		serverSide, clientSide := net.Pipe()
		if _, err := srv.Connect(ctx, dialTransport(serverSide), nil); err != nil {
			clientSide.Close()
			return nil, err
		}
		return clientSide, nil
	}}, nil
}

func errorResult(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

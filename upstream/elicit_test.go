package upstream_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/upstream"
)

// TestHubElicitationDefaults: a ClientRequests handler that accepts an
// elicitation with fields left out has the requested schema's defaults
// filled in (SEP-1034), as the SDK's client does for its own handlers, and
// it is given params that say their mode, not "mode": "". What the Hub
// sends is read off the wire: the go-sdk's server fills defaults itself,
// other servers (the TypeScript SDK's) do not.
func TestHubElicitationDefaults(t *testing.T) {
	checkGoroutines(t)
	const schema = `{"type":"object","properties":{
		"name":{"type":"string","default":"John Doe"},
		"age":{"type":"integer","default":30},
		"score":{"type":"number","default":95.5},
		"status":{"type":"string","enum":["active","inactive"],"default":"active"},
		"verified":{"type":"boolean","default":true},
		"nickname":{"type":"string"}}}`
	srv := mcp.NewServer(&mcp.Implementation{Name: "asker", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "form", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Your details?", RequestedSchema: json.RawMessage(schema)})
			if err != nil {
				return nil, err
			}
			b, _ := json.Marshal(res.Content)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Action + " " + string(b)}}}, nil
		})
	// As a server that leaves the mode out (the TypeScript SDK's): the
	// go-sdk's server would say "form".
	srv.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if p, ok := req.GetParams().(*mcp.ElicitParams); ok {
				p.Mode = ""
			}
			return next(ctx, method, req)
		}
	})
	a := &answerer{caps: upstream.ClientCapabilities{Elicitation: true},
		answers: map[string]string{upstream.MethodElicit: `{"action":"accept","content":{"name":"Ada"}}`}}
	var wire testenv.Buffer // what the Hub writes to the server
	dial := config.Server{Dial: func(ctx context.Context) (io.ReadWriteCloser, error) {
		serverSide, clientSide := net.Pipe()
		if _, err := srv.Connect(ctx, &mcp.IOTransport{Reader: io.NopCloser(io.TeeReader(serverSide, &wire)), Writer: serverSide}, nil); err != nil {
			clientSide.Close()
			return nil, err
		}
		return clientSide, nil
	}}
	hub := startHub(t, &config.Config{Servers: map[string]config.Server{"asker": dial}}, &upstream.HubOptions{ClientRequests: a}, nil)

	res, err := hub.Call(context.Background(), "asker__form", nil)
	if err != nil {
		t.Fatal(err)
	}
	action, content, _ := strings.Cut(res.Content, " ")
	var got map[string]any
	if err := json.Unmarshal([]byte(content), &got); action != "accept" || err != nil {
		t.Fatalf("the server got %q", res.Content)
	}
	want := map[string]any{"name": "Ada", "age": 30.0, "score": 95.5, "status": "active", "verified": true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("content the server got (-want +got):\n%s", diff)
	}
	var sent map[string]any
	for line := range strings.Lines(wire.String()) {
		var msg struct {
			Result struct {
				Action  string         `json:"action"`
				Content map[string]any `json:"content"`
			} `json:"result"`
		}
		if json.Unmarshal([]byte(line), &msg) == nil && msg.Result.Action == "accept" {
			sent = msg.Result.Content
		}
	}
	if diff := cmp.Diff(want, sent); diff != "" {
		t.Errorf("content the Hub sent (-want +got):\n%s", diff)
	}
	reqs, _ := a.requests()
	if len(reqs) != 1 {
		t.Fatalf("handler asked %d times, want 1", len(reqs))
	}
	var params struct {
		Mode *string `json:"mode"`
	}
	if err := json.Unmarshal(reqs[0].Params, &params); err != nil || params.Mode == nil || *params.Mode != "form" {
		t.Errorf("handler's params = %s, want mode form", reqs[0].Params)
	}
}

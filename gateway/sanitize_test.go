package gateway_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/internal/testenv"
)

// hostileText holds what a terminal or a UI acts on: ESC (a CSI that
// clears the screen), an OSC 52 clipboard write ended by BEL, and a
// right-to-left override.
const hostileText = "Read a file.\x1b[2J\x1b]52;c;ZXZpbA==\x07 \u202eexe.txt"

// raw reports whether s holds a character termsafe escapes.
func raw(s string) bool {
	return strings.ContainsAny(s, "\x1b\x07\u202e")
}

// TestUpstreamTextEscaped: a hostile upstream's title, description,
// parameter descriptions and progress messages reach the client escaped
// (\x1b, \u202e as text), in tools/list, in search_tools' answer and in
// progress notifications.
func TestUpstreamTextEscaped(t *testing.T) {
	progress := make(chan string, 4)
	up := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	up.AddTool(&mcp.Tool{Name: "read_file", Title: "Read\x1b]0;pwned\x07", Description: hostileText,
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string", "description": "The path.\x1b[1A\x1b[2K"}}},
		Annotations: &mcp.ToolAnnotations{Title: "\u202eelif"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if tok := req.Params.GetProgressToken(); tok != nil {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2, Message: "half\x1b[2J\x07 done\u202e"})
				// Answer once the client has the notice: a result
				// first would end the call's progress.
				for deadline := time.Now().Add(testenv.WaitLimit()); len(progress) == 0 && time.Now().Before(deadline); {
					time.Sleep(5 * time.Millisecond)
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	cfg := &config.Config{Servers: map[string]config.Server{"up": dialed(up)}}
	ts, hub := openToolset(t, cfg)
	p, err := gateway.NewProxy(ts, hub, &gateway.ProxyOptions{PinnedTools: []string{"up__read_file"}})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := p.NewServer().Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cl := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { progress <- r.Params.Message },
	})
	cs, err := cl.Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var listed *mcp.Tool
	for _, tl := range res.Tools {
		if tl.Name == "up__read_file" {
			listed = tl
		}
	}
	if listed == nil {
		t.Fatalf("up__read_file not listed")
	}
	schema, _ := json.Marshal(listed.InputSchema)
	for what, s := range map[string]string{"title": listed.Title, "description": listed.Description, "annotations title": listed.Annotations.Title} {
		if raw(s) {
			t.Errorf("tools/list: the %s holds raw control characters: %q", what, s)
		}
	}
	if !strings.Contains(listed.Description, `\x1b[2J`) || !strings.Contains(listed.Description, `\u202e`) {
		t.Errorf("tools/list: description %q: want the escapes shown", listed.Description)
	}
	if strings.Contains(string(schema), `\u001b`) || !strings.Contains(string(schema), `The path.\\x1b[1A`) {
		t.Errorf("tools/list: input schema %s: want its description escaped", schema)
	}

	c := &client{ClientSession: cs}
	ans := c.search(t, "read a file", 1)
	if len(ans.Tools) != 1 {
		t.Fatalf("search_tools: %+v", ans)
	}
	if f := ans.Tools[0]; raw(f.Title) || raw(f.Description) || strings.Contains(string(f.InputSchema), `\u001b`) {
		t.Errorf("search_tools: %q %q %s: raw control characters", f.Title, f.Description, f.InputSchema)
	}

	params := &mcp.CallToolParams{Name: "up__read_file", Arguments: map[string]any{"path": "x"}}
	params.SetProgressToken("p1")
	if _, err := cs.CallTool(context.Background(), params); err != nil {
		t.Fatal(err)
	}
	select {
	case msg := <-progress:
		if raw(msg) || !strings.Contains(msg, `half\x1b[2J\x07 done\u202e`) {
			t.Errorf("progress message %q: want it escaped", msg)
		}
	case <-time.After(testenv.WaitLimit()):
		t.Fatal("no progress notification")
	}
}

package upstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/upstream"
)

// ignoreRaw leaves Result.Raw to the tests of the passthrough.
var ignoreRaw = cmpopts.IgnoreFields(tool.Result{}, "Raw")

// canonicalJSON re-encodes b with sorted keys, for comparing JSON values.
func canonicalJSON(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

func TestHubToolOutputSchemaAndAnnotations(t *testing.T) {
	checkGoroutines(t)
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	out := json.RawMessage(`{"type":"object","properties":{"temperature":{"type":"number"}},"required":["temperature"]}`)
	handler := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{StructuredContent: map[string]any{"temperature": 21.5}}, nil
	}
	srv.AddTool(&mcp.Tool{
		Name: "weather", Description: "Weather now.", InputSchema: json.RawMessage(`{"type":"object"}`), OutputSchema: out,
		Annotations: &mcp.ToolAnnotations{Title: "Weather", ReadOnlyHint: true, DestructiveHint: new(false)},
	}, handler)
	ch := make(changes, 8)
	hub := startHub(t, &config.Config{Servers: map[string]config.Server{"wx": memServer(srv)}}, nil, ch.onChange)
	first := ch.next(t)

	got := hub.Tools()
	if len(got) != 1 {
		t.Fatalf("Tools() = %v, want one tool", toolNames(got))
	}
	if canonicalJSON(t, got[0].OutputSchema) != canonicalJSON(t, out) {
		t.Errorf("OutputSchema = %s, want %s", got[0].OutputSchema, out)
	}
	wantAnn := &tool.Annotations{Title: "Weather", ReadOnlyHint: new(true), DestructiveHint: new(false)}
	if diff := cmp.Diff(wantAnn, got[0].Annotations); diff != "" {
		t.Errorf("Annotations (-want +got):\n%s", diff)
	}
	if got[0].Title != "Weather" {
		t.Errorf("Title = %q, want the annotations' title", got[0].Title)
	}

	// A new output schema is a change (consumers such as a proxy list
	// it), but not of the hash: nothing derived from the hash depends on
	// it.
	out2 := json.RawMessage(`{"type":"object","properties":{"temperature":{"type":"number"},"unit":{"type":"string"}}}`)
	srv.AddTool(&mcp.Tool{Name: "weather", Description: "Weather now.", InputSchema: json.RawMessage(`{"type":"object"}`), OutputSchema: out2}, handler)
	next := ch.next(t)
	if diff := cmp.Diff(changeSummary{Server: "wx", Changed: []string{"wx__weather"}}, summarize(next)); diff != "" {
		t.Fatalf("change after a new output schema (-want +got):\n%s", diff)
	}
	if next.Changed[0].Hash != first.Added[0].Hash {
		t.Errorf("the output schema changed the content hash")
	}
	if canonicalJSON(t, next.Changed[0].OutputSchema) != canonicalJSON(t, out2) {
		t.Errorf("changed OutputSchema = %s, want %s", next.Changed[0].OutputSchema, out2)
	}
}

func TestHubCallRawResult(t *testing.T) {
	checkGoroutines(t)
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	sent := &mcp.CallToolResult{
		Meta: mcp.Meta{"trace": "abc"},
		Content: []mcp.Content{
			&mcp.TextContent{Text: "hello", Annotations: &mcp.Annotations{Audience: []mcp.Role{"user"}, Priority: 0.5}},
			&mcp.ImageContent{Data: []byte("\x89PNG..."), MIMEType: "image/png"},
			&mcp.AudioContent{Data: []byte("RIFF"), MIMEType: "audio/wav"},
			&mcp.ResourceLink{URI: "demo://doc/1", Name: "doc1", MIMEType: "text/plain"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "demo://doc/2", MIMEType: "text/plain", Text: "two"}},
		},
		StructuredContent: map[string]any{"n": 42.0},
	}
	srv.AddTool(&mcp.Tool{Name: "mixed", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return sent, nil })
	srv.AddTool(&mcp.Tool{Name: "throws", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, errors.New("kaput")
		})
	hub := startHub(t, &config.Config{Servers: map[string]config.Server{"s": memServer(srv)}}, nil, nil)
	ctx := context.Background()

	res, err := hub.Call(ctx, "s__mixed", nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(sent)
	if diff := cmp.Diff(canonicalJSON(t, want), canonicalJSON(t, res.Raw)); diff != "" {
		t.Errorf("Raw (-sent +got):\n%s", diff)
	}
	if !strings.Contains(res.Content, "hello") || string(res.Structured) != `{"n":42}` {
		t.Errorf("rendered result lost content: %+v", res)
	}

	// A server's JSON-RPC error (here, a handler's error the SDK turns
	// into one) is an isError result; Raw says the same.
	res, err = hub.Call(ctx, "s__throws", nil)
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Content []struct{ Type, Text string }
		IsError bool
	}
	if err := json.Unmarshal(res.Raw, &raw); err != nil {
		t.Fatalf("Raw %s: %v", res.Raw, err)
	}
	if !res.IsError || !raw.IsError || len(raw.Content) != 1 || raw.Content[0].Type != "text" || !strings.Contains(raw.Content[0].Text, "kaput") {
		t.Errorf("error result = %+v, Raw %s; want isError with the server's message", res, res.Raw)
	}
}

// progressServer has a tool "work" that sends n progress notices for the
// call's token, if it has one, and says whether it had one. With a token,
// it answers only once seen is closed: the SDK hands a result to its
// caller at once but notifications to a goroutine of their own, so a
// notice sent just before the result may otherwise come after it.
func progressServer(n int, seen <-chan struct{}) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "p", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "work", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			token := req.Params.GetProgressToken()
			if token != nil {
				for i := 1; i <= n; i++ {
					if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
						ProgressToken: token, Progress: float64(i), Total: float64(n), Message: fmt.Sprintf("step %d", i),
					}); err != nil {
						return nil, err
					}
				}
				select {
				case <-seen:
				case <-time.After(waitLimit()):
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("token: %v", token != nil)}}}, nil
		})
	return srv
}

func TestHubCallProgress(t *testing.T) {
	checkGoroutines(t)
	seen := make(chan struct{})
	hub := startHub(t, &config.Config{Servers: map[string]config.Server{"p": memServer(progressServer(3, seen))}}, nil, nil)

	var mu sync.Mutex
	var got []upstream.CallProgress
	ctx := upstream.WithProgress(context.Background(), func(p upstream.CallProgress) {
		mu.Lock()
		got = append(got, p)
		if len(got) == 3 {
			close(seen)
		}
		mu.Unlock()
	})
	res, err := hub.Call(ctx, "p__work", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Content != "token: true" {
		t.Errorf("with WithProgress the server saw %q, want a progress token", res.Content)
	}
	mu.Lock()
	want := []upstream.CallProgress{{1, 3, "step 1"}, {2, 3, "step 2"}, {3, 3, "step 3"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
	mu.Unlock()

	res, err = hub.Call(context.Background(), "p__work", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Content != "token: false" {
		t.Errorf("without WithProgress the server saw %q, want no token", res.Content)
	}
}

func TestHubCallCancelReachesServer(t *testing.T) {
	checkGoroutines(t)
	started := make(chan struct{})
	cancelled := make(chan error, 1)
	srv := mcp.NewServer(&mcp.Implementation{Name: "slow", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "wait", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			close(started)
			select {
			case <-ctx.Done(): // the SDK cancels it on notifications/cancelled
				cancelled <- ctx.Err()
			case <-time.After(waitLimit()):
				cancelled <- errors.New("never cancelled")
			}
			return &mcp.CallToolResult{}, nil
		})
	hub := startHub(t, &config.Config{Servers: map[string]config.Server{"slow": memServer(srv)}}, nil, nil)

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := hub.Call(ctx, "slow__wait", nil)
		errc <- err
	}()
	<-started
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "slow") {
		t.Errorf("Call error = %v, want context.Canceled naming the server", err)
	}
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Errorf("the server's handler: %v, want its ctx cancelled", err)
	}
}

//lint:file-ignore SA1019 sampling and roots are deprecated as of MCP 2026-07-28, but servers still ask for them during the deprecation window and a proxy forwards what they ask.

package upstream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/upstream"
)

// answerer is a ClientRequests that records what it is asked and answers
// from a table by method.
type answerer struct {
	caps    upstream.ClientCapabilities
	answers map[string]string // method → result JSON

	mu   sync.Mutex
	got  []upstream.ClientRequest
	seen []any // ctx.Value(callerKey{}) per request
}

type callerKey struct{}

func (a *answerer) Capabilities() upstream.ClientCapabilities { return a.caps }

func (a *answerer) HandleClientRequest(ctx context.Context, req upstream.ClientRequest) (json.RawMessage, error) {
	a.mu.Lock()
	a.got = append(a.got, req)
	a.seen = append(a.seen, ctx.Value(callerKey{}))
	a.mu.Unlock()
	ans, ok := a.answers[req.Method]
	if !ok {
		return nil, &upstream.RPCError{Code: -32600, Message: "the user said no"}
	}
	return json.RawMessage(ans), nil
}

func (a *answerer) requests() ([]upstream.ClientRequest, []any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]upstream.ClientRequest(nil), a.got...), append([]any(nil), a.seen...)
}

// askingServer has a tool "ask" that asks its client for what its
// argument names, each in a multi round-trip result (which the SDK's
// server sends as requests to clients of older revisions), and returns the
// answers as JSON text, or the client's error.
func askingServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "asker", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object","properties":{"what":{"type":"string"}}}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct{ What string }
			_ = json.Unmarshal(req.Params.Arguments, &args)
			if len(req.Params.InputResponses) == 0 {
				var in mcp.InputRequest
				switch args.What {
				case "sampling":
					in = &mcp.CreateMessageParams{Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "say hi"}}}, MaxTokens: 10}
				case "elicitation":
					in = &mcp.ElicitParams{Message: "Your name?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)}
				case "roots":
					in = &mcp.ListRootsParams{}
				}
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": in}, RequestState: "s1"}, nil
			}
			b, _ := json.Marshal(req.Params.InputResponses["q"])
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
		})
	// "direct" asks with a plain request, whatever the client declared,
	// and returns the answer or the client's error as text.
	srv.AddTool(&mcp.Tool{Name: "direct", InputSchema: json.RawMessage(`{"type":"object","properties":{"what":{"type":"string"}}}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct{ What string }
			_ = json.Unmarshal(req.Params.Arguments, &args)
			var res any
			var err error
			switch args.What {
			case "sampling":
				res, err = req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "say hi"}}}, MaxTokens: 10})
			case "roots":
				res, err = req.Session.ListRoots(ctx, nil)
			}
			text := fmt.Sprint(err)
			if err == nil {
				b, _ := json.Marshal(res)
				text = string(b)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
		})
	return srv
}

func TestHubClientRequests(t *testing.T) {
	answers := map[string]string{
		upstream.MethodCreateMessage: `{"role":"assistant","content":{"type":"text","text":"hi!"},"model":"test-model"}`,
		upstream.MethodElicit:        `{"action":"accept","content":{"name":"Ada"}}`,
		upstream.MethodListRoots:     `{"roots":[{"uri":"file:///work","name":"work"}]}`,
	}
	all := upstream.ClientCapabilities{Sampling: true, Elicitation: true, Roots: true}
	tests := []struct {
		name     string
		protocol string
		caps     upstream.ClientCapabilities
		tool     string
		what     string
		want     string // in the tool's text: the answer, or the error
	}{
		{"sampling", "", all, "ask", "sampling", `"text":"hi!"`},
		{"elicitation", "", all, "ask", "elicitation", `"name":"Ada"`},
		{"roots", "", all, "ask", "roots", `file:///work`},
		{"sampling request", "", all, "direct", "sampling", `"text":"hi!"`},
		{"roots request", "", all, "direct", "roots", `file:///work`},
		{"sampling not offered", "", upstream.ClientCapabilities{Elicitation: true}, "direct", "sampling", "toolsift does not offer sampling/createMessage to server asker"},
		{"roots not offered", "", upstream.ClientCapabilities{}, "direct", "roots", "toolsift does not offer roots/list to server asker"},
		// The 2026-07-28 revision sends them inside the call's result:
		// the SDK asks with the call's own ctx.
		{"sampling, multi round-trip", "latest", all, "ask", "sampling", `"text":"hi!"`},
		{"elicitation, multi round-trip", "latest", all, "ask", "elicitation", `"name":"Ada"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkGoroutines(t)
			a := &answerer{caps: tt.caps, answers: answers}
			hub := startHub(t, &config.Config{Servers: map[string]config.Server{"asker": memServer(askingServer())}},
				&upstream.HubOptions{ClientRequests: a, ProtocolVersion: tt.protocol}, nil)
			ctx := context.WithValue(context.Background(), callerKey{}, "session-7")
			res, err := hub.Call(ctx, "asker__"+tt.tool, json.RawMessage(fmt.Sprintf(`{"what":%q}`, tt.what)))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(res.Content, tt.want) {
				t.Fatalf("result %q (isError %v) does not contain %q", res.Content, res.IsError, tt.want)
			}
			got, seen := a.requests()
			if strings.Contains(tt.want, "does not offer") {
				if len(got) != 0 {
					t.Errorf("the handler was asked %v for a request it does not offer", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("handler asked %d times, want once: %+v", len(got), got)
			}
			if got[0].Server != "asker" || got[0].Call != "asker__"+tt.tool || !json.Valid(got[0].Params) {
				t.Errorf("request = %+v, want from asker, for asker__%s, with JSON params", got[0], tt.tool)
			}
			if seen[0] != "session-7" {
				t.Errorf("ctx value in the handler = %v, want the call's", seen[0])
			}
		})
	}
}

// TestHubClientRequestsDeclaresCapabilities checks what a server is told
// in initialize: only what the handler offers, and no roots by default
// (servers would replace their configured folders with ours).
func TestHubClientRequestsDeclaresCapabilities(t *testing.T) {
	checkGoroutines(t)
	for _, tt := range []struct {
		name string
		opts *upstream.HubOptions
		want string
	}{
		{"none", nil, `{}`},
		{"sampling and elicitation", &upstream.HubOptions{ClientRequests: &answerer{caps: upstream.ClientCapabilities{SamplingTools: true, ElicitationURL: true}}},
			`{"elicitation":{"form":{},"url":{}},"sampling":{"tools":{}}}`},
		{"roots", &upstream.HubOptions{ClientRequests: &answerer{caps: upstream.ClientCapabilities{Roots: true}}}, `{"roots":{}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			caps := make(chan []byte, 1)
			srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, &mcp.ServerOptions{
				InitializedHandler: func(_ context.Context, req *mcp.InitializedRequest) {
					// The SDK's decoded capabilities always marshal
					// "roots" (a struct, not a pointer); RootsV2 says
					// whether the client sent it.
					c := req.Session.InitializeParams().Capabilities
					b, _ := json.Marshal(struct {
						Sampling    *mcp.SamplingCapabilities    `json:"sampling,omitempty"`
						Elicitation *mcp.ElicitationCapabilities `json:"elicitation,omitempty"`
						Roots       *mcp.RootCapabilities        `json:"roots,omitempty"`
					}{c.Sampling, c.Elicitation, c.RootsV2})
					caps <- b
				},
			})
			addTextTool(srv, "t", "A tool.", "ok")
			startHub(t, &config.Config{Servers: map[string]config.Server{"s": memServer(srv)}}, tt.opts, nil)
			if got := canonicalJSON(t, <-caps); got != tt.want {
				t.Errorf("declared %s, want %s", got, tt.want)
			}
		})
	}
}

// TestHubClientRequestsAmbiguous: with two calls in flight to a server
// that asks with a plain request, the Hub cannot tell whose it is, and
// says so rather than guess.
func TestHubClientRequestsAmbiguous(t *testing.T) {
	checkGoroutines(t)
	release := make(chan struct{})
	holding := make(chan struct{})
	srv := askingServer()
	srv.AddTool(&mcp.Tool{Name: "hold", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			close(holding)
			<-release
			return &mcp.CallToolResult{}, nil
		})
	a := &answerer{caps: upstream.ClientCapabilities{Sampling: true}, answers: map[string]string{
		upstream.MethodCreateMessage: `{"role":"assistant","content":{"type":"text","text":"hi!"},"model":"m"}`,
	}}
	hub := startHub(t, &config.Config{Servers: map[string]config.Server{"asker": memServer(srv)}}, &upstream.HubOptions{ClientRequests: a}, nil)

	held := make(chan error, 1)
	go func() {
		_, err := hub.Call(context.WithValue(context.Background(), callerKey{}, "A"), "asker__hold", nil)
		held <- err
	}()
	<-holding
	res, err := hub.Call(context.WithValue(context.Background(), callerKey{}, "B"), "asker__ask", json.RawMessage(`{"what":"sampling"}`))
	close(release)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Content, "hi!") {
		t.Errorf("result %q: the handler's answer did not reach the server", res.Content)
	}
	got, seen := a.requests()
	if diff := cmp.Diff([]upstream.ClientRequest{{Server: "asker", Method: upstream.MethodCreateMessage, Params: got[0].Params}}, got); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if seen[0] != nil {
		t.Errorf("ctx carried %v; with two calls in flight it must carry neither", seen[0])
	}
}

func TestHubClientRequestsHandlerError(t *testing.T) {
	checkGoroutines(t)
	a := &answerer{caps: upstream.ClientCapabilities{Sampling: true}} // no answers: every request is declined
	hub := startHub(t, &config.Config{Servers: map[string]config.Server{"asker": memServer(askingServer())}}, &upstream.HubOptions{ClientRequests: a}, nil)
	res, err := hub.Call(context.Background(), "asker__ask", json.RawMessage(`{"what":"sampling"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(res.Content, "the user said no") {
		t.Errorf("result %+v: want the handler's refusal as the server's error", res)
	}
}

// TestHubClientRequestsForPromptsAndResources: a server may ask its client
// while it gets a prompt or reads a resource, too; the request belongs to
// that Hub request.
func TestHubClientRequestsForPromptsAndResources(t *testing.T) {
	checkGoroutines(t)
	elicit := mcp.InputRequestMap{"q": &mcp.ElicitParams{Message: "Which one?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)}}
	answer := func(in mcp.InputResponseMap) string {
		b, _ := json.Marshal(in["q"])
		return string(b)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "asker", Version: "1"}, nil)
	srv.AddPrompt(&mcp.Prompt{Name: "pick"}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		if len(req.Params.InputResponses) == 0 {
			return &mcp.GetPromptResult{InputRequests: elicit}, nil
		}
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: answer(req.Params.InputResponses)}}}}, nil
	})
	srv.AddResource(&mcp.Resource{URI: "asker://choice", Name: "choice"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		if len(req.Params.InputResponses) == 0 {
			return &mcp.ReadResourceResult{InputRequests: elicit}, nil
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: answer(req.Params.InputResponses)}}}, nil
	})
	// The SDK's server asks older clients with plain requests for prompts
	// only; resources need the multi round-trip revision.
	for _, protocol := range []string{"", "latest"} {
		t.Run("protocol "+protocol, func(t *testing.T) {
			a := &answerer{caps: upstream.ClientCapabilities{Elicitation: true}, answers: map[string]string{upstream.MethodElicit: `{"action":"accept","content":{"name":"Ada"}}`}}
			hub := startHub(t, &config.Config{Servers: map[string]config.Server{"asker": memServer(srv)}}, &upstream.HubOptions{ClientRequests: a, ProtocolVersion: protocol}, nil)
			ctx := context.WithValue(context.Background(), callerKey{}, "session-9")

			raw, err := hub.Passthrough().GetPrompt(ctx, "asker__pick", nil)
			if err != nil || !strings.Contains(string(raw), "Ada") {
				t.Errorf("GetPrompt = %s, %v; want the answer in it", raw, err)
			}
			want := []string{"elicitation/create asker__pick session-9"}
			if protocol == "latest" {
				raw, err = hub.Passthrough().ReadResource(ctx, "asker://choice")
				if err != nil || !strings.Contains(string(raw), "Ada") {
					t.Errorf("ReadResource = %s, %v; want the answer in it", raw, err)
				}
				want = append(want, "elicitation/create asker://choice session-9")
			}
			got, seen := a.requests()
			var calls []string
			for i, r := range got {
				calls = append(calls, fmt.Sprintf("%s %s %v", r.Method, r.Call, seen[i]))
			}
			if diff := cmp.Diff(want, calls); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

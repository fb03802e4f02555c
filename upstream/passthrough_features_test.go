package upstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/upstream"
)

// textResource answers a read with text naming the server and URI.
func textResource(server string) mcp.ResourceHandler {
	return func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: server + " has " + req.Params.URI}}}, nil
	}
}

// resourceText reads uri through hub and returns its first text.
func resourceText(t *testing.T, hub *upstream.Hub, uri string) string {
	t.Helper()
	raw, err := hub.Passthrough().ReadResource(context.Background(), uri)
	if err != nil {
		t.Fatalf("ReadResource(%s): %v", uri, err)
	}
	var res struct{ Contents []struct{ URI, Text string } }
	if err := json.Unmarshal(raw, &res); err != nil || len(res.Contents) == 0 {
		t.Fatalf("ReadResource(%s) = %s: %v", uri, raw, err)
	}
	return res.Contents[0].Text
}

func TestHubResourcesAndPrompts(t *testing.T) {
	checkGoroutines(t)
	docs := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "1"}, nil)
	addTextTool(docs, "t", "A tool.", "ok")
	docs.AddResource(&mcp.Resource{URI: "file:///notes.txt", Name: "notes", Title: "Notes", MIMEType: "text/plain"}, textResource("docs"))
	docs.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "docs://page/{id}", Name: "page"}, textResource("docs"))
	docs.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "x://{id}", Name: "x"}, textResource("docs"))
	docs.AddResource(&mcp.Resource{URI: "file:///broken", Name: "broken"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return nil, mcp.ResourceNotFoundError("file:///broken")
	})
	docs.AddPrompt(&mcp.Prompt{Name: "greet", Description: "Greets someone.", Arguments: []*mcp.PromptArgument{{Name: "name", Required: true}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Hello " + req.Params.Arguments["name"]}}}}, nil
		})
	// "other" (after "docs" by name) has a template that matches the same
	// URIs as docs', and a tool that links to one of them.
	other := mcp.NewServer(&mcp.Implementation{Name: "other", Version: "1"}, nil)
	other.AddResource(&mcp.Resource{URI: "file:///other.txt", Name: "other notes"}, textResource("other"))
	other.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "x://{id}", Name: "x"}, textResource("other"))
	other.AddTool(&mcp.Tool{Name: "link", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ResourceLink{URI: "x://7", Name: "seven"}}}, nil
		})

	lists := make(chan upstream.ListChange, 8)
	hub := startHub(t, &config.Config{Servers: map[string]config.Server{"docs": memServer(docs), "other": memServer(other)}},
		&upstream.HubOptions{OnListChange: func(c upstream.ListChange) { lists <- c }}, nil)

	var uris, names []string
	for _, r := range hub.Passthrough().Resources(context.Background()) {
		uris = append(uris, r.URI)
		names = append(names, r.Name)
	}
	if diff := cmp.Diff([]string{"file:///broken", "file:///notes.txt", "file:///other.txt"}, uris); diff != "" {
		t.Errorf("Resources() URIs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"docs__broken", "docs__notes", upstream.QualifiedName("other", "other notes")}, names); diff != "" {
		t.Errorf("Resources() names (-want +got):\n%s", diff)
	}
	var tmpl []string
	for _, r := range hub.Passthrough().ResourceTemplates(context.Background()) {
		tmpl = append(tmpl, r.Server+" "+r.URITemplate)
	}
	// Templates both servers list alike are each under their namespaced form.
	if diff := cmp.Diff([]string{"docs docs://page/{id}", "docs toolsift:docs/x://{id}", "other toolsift:other/x://{id}"}, tmpl); diff != "" {
		t.Errorf("ResourceTemplates() (-want +got):\n%s", diff)
	}
	prompts := hub.Passthrough().Prompts(context.Background())
	if len(prompts) != 1 || prompts[0].Name != "docs__greet" || prompts[0].OriginalName != "greet" ||
		len(prompts[0].Arguments) != 1 || !prompts[0].Arguments[0].Required || !strings.Contains(string(prompts[0].Raw), `"name":"greet"`) {
		t.Errorf("Prompts() = %+v, want docs__greet with its required argument and raw entry", prompts)
	}

	for uri, want := range map[string]string{
		"file:///notes.txt":    "docs has file:///notes.txt", // listed
		"file:///other.txt":    "other has file:///other.txt",
		"docs://page/7":        "docs has docs://page/7", // a template's
		"toolsift:docs/x://1":  "docs has x://1",         // a template both list: by its namespaced form
		"toolsift:other/x://1": "other has x://1",
	} {
		if got := resourceText(t, hub, uri); got != want {
			t.Errorf("ReadResource(%s) = %q, want %q", uri, got, want)
		}
	}
	// A URI both servers' templates match is refused, not guessed.
	if _, err := hub.Passthrough().ReadResource(context.Background(), "x://1"); !errors.Is(err, upstream.ErrAmbiguousResource) || !strings.Contains(err.Error(), "docs and other") {
		t.Errorf("ReadResource(x://1) error = %v, want ErrAmbiguousResource naming both", err)
	}
	// A link in a call result whose URI another server's template claims
	// comes back under the namespaced URI of the server that gave it, and
	// reads from it.
	res, err := hub.Call(context.Background(), "other__link", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.Raw), `"uri":"toolsift:other/x://7"`) || !strings.Contains(res.Content, "toolsift:other/x://7") {
		t.Errorf("other's link = %s / %q, want it namespaced", res.Raw, res.Content)
	}
	if got := resourceText(t, hub, "toolsift:other/x://7"); got != "other has x://7" {
		t.Errorf("ReadResource(toolsift:other/x://7) = %q, want other's", got)
	}

	ctx := context.Background()
	if _, err := hub.Passthrough().ReadResource(ctx, "nope://x"); !errors.Is(err, upstream.ErrUnknownResource) {
		t.Errorf("ReadResource(nope://x) error = %v, want ErrUnknownResource", err)
	}
	_, err = hub.Passthrough().ReadResource(ctx, "file:///broken")
	var rpcErr *upstream.RPCError
	var sent *jsonrpc.Error
	errors.As(mcp.ResourceNotFoundError("file:///broken"), &sent)
	if !errors.As(err, &rpcErr) || rpcErr.Code != sent.Code || rpcErr.Message != sent.Message || !strings.Contains(err.Error(), "server docs") {
		t.Errorf("ReadResource(file:///broken) error = %v, want the server's JSON-RPC error %v naming docs", err, sent)
	}

	raw, err := hub.Passthrough().GetPrompt(ctx, "docs__greet", map[string]string{"name": "Ada"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"text":"Hello Ada"`) {
		t.Errorf("GetPrompt = %s, want the greeting", raw)
	}
	if _, err := hub.Passthrough().GetPrompt(ctx, "docs__nope", nil); !errors.Is(err, upstream.ErrUnknownPrompt) {
		t.Errorf("GetPrompt(docs__nope) error = %v, want ErrUnknownPrompt", err)
	}

	// list_changed re-lists, and OnListChange hears it after the lists
	// changed.
	docs.AddResource(&mcp.Resource{URI: "file:///new.txt", Name: "new"}, textResource("docs"))
	waitList(t, lists, upstream.ListChange{Server: "docs", Resources: true})
	if got := resourceText(t, hub, "file:///new.txt"); got != "docs has file:///new.txt" {
		t.Errorf("new resource read %q", got)
	}
	docs.RemovePrompts("greet")
	waitList(t, lists, upstream.ListChange{Server: "docs", Prompts: true})
	if p := hub.Passthrough().Prompts(context.Background()); len(p) != 0 {
		t.Errorf("Prompts() after removal = %+v", p)
	}
	// A new tool is heard as a word that differed; the same tool
	// registered again, the list the same, as the word alone.
	addTextTool(docs, "u", "Another tool.", "ok")
	waitList(t, lists, upstream.ListChange{Server: "docs", Tools: true, ToolsDiffered: true})
	if !slices.ContainsFunc(hub.Tools(), func(tl tool.Tool) bool { return tl.Name == "docs__u" }) {
		t.Error("docs__u not among the Hub's tools once its server said its tools changed")
	}
	addTextTool(docs, "u", "Another tool.", "ok")
	waitList(t, lists, upstream.ListChange{Server: "docs", Tools: true})
}

// waitList waits for want among the list changes.
func waitList(t *testing.T, lists chan upstream.ListChange, want upstream.ListChange) {
	t.Helper()
	for {
		select {
		case got := <-lists:
			if got == want {
				return
			}
		case <-time.After(waitLimit()):
			t.Fatalf("no list change %+v", want)
		}
	}
}

// TestCacheFeatures: a lazy server's resources and prompts come from its
// cache entry, so they are listed before it starts; reading one starts it,
// and its lists then are the server's.
func TestCacheFeatures(t *testing.T) {
	checkGoroutines(t)
	cacheTransports(t)
	dir := t.TempDir()
	var conns atomic.Int32
	srv := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "1"}, nil)
	addTextTool(srv, "t", "A tool.", "ok")
	srv.AddResource(&mcp.Resource{URI: "file:///notes.txt", Name: "notes"}, textResource("docs"))
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "docs://page/{id}", Name: "page"}, textResource("docs"))
	srv.AddPrompt(&mcp.Prompt{Name: "greet"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Hello"}}}}, nil
	})
	cfg := &config.Config{Servers: map[string]config.Server{"docs": countedServer(srv, &conns)}}
	first := startHub(t, cfg, &upstream.HubOptions{Store: dirStore(t, dir)}, nil)
	wantRes, wantTmpl, wantPrompts := first.Passthrough().Resources(context.Background()), first.Passthrough().ResourceTemplates(context.Background()), first.Passthrough().Prompts(context.Background())
	first.Close()

	lists := make(chan upstream.ListChange, 4)
	hub := startHub(t, cfg, &upstream.HubOptions{Store: dirStore(t, dir), OnListChange: func(c upstream.ListChange) { lists <- c }}, nil)
	if st := statusOf(t, hub, "docs"); st.State != upstream.StateLazy || conns.Load() != 1 {
		t.Fatalf("second Hub: server %s after %d connections, want lazy after 1", st.State, conns.Load())
	}
	if diff := cmp.Diff(wantRes, hub.Passthrough().Resources(context.Background())); diff != "" {
		t.Errorf("cached Resources() (-live +cached):\n%s", diff)
	}
	if diff := cmp.Diff(wantTmpl, hub.Passthrough().ResourceTemplates(context.Background())); diff != "" {
		t.Errorf("cached ResourceTemplates() (-live +cached):\n%s", diff)
	}
	if diff := cmp.Diff(wantPrompts, hub.Passthrough().Prompts(context.Background())); diff != "" {
		t.Errorf("cached Prompts() (-live +cached):\n%s", diff)
	}
	if got := resourceText(t, hub, "docs://page/3"); got != "docs has docs://page/3" || conns.Load() != 2 {
		t.Errorf("ReadResource of a lazy server = %q after %d connections, want it read after a start", got, conns.Load())
	}
	// Same lists once started: nothing to tell.
	select {
	case c := <-lists:
		t.Errorf("list change %+v after a start with the cached lists", c)
	default:
	}
}

// A server may list resources and answer resources/templates/list with
// "method not found" (the resources capability does not promise templates):
// its resources are served, it has no templates, and no warning is logged.
func TestHubResourcesWithoutTemplates(t *testing.T) {
	checkGoroutines(t)
	srv := mcp.NewServer(&mcp.Implementation{Name: "plain", Version: "1"}, nil)
	addTextTool(srv, "t", "A tool.", "ok")
	srv.AddResource(&mcp.Resource{URI: "file:///a.txt", Name: "a"}, textResource("plain"))
	var asked atomic.Int32
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "resources/templates/list" {
				asked.Add(1)
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found"}
			}
			return next(ctx, method, req)
		}
	})
	var logs logBuffer
	hub := startHub(t, &config.Config{Servers: map[string]config.Server{"plain": memServer(srv)}},
		&upstream.HubOptions{Logger: logs.logger()}, nil)
	if asked.Load() == 0 {
		t.Fatal("the hub never asked for resource templates: the test proves nothing")
	}
	var uris []string
	for _, r := range hub.Passthrough().Resources(context.Background()) {
		uris = append(uris, r.URI)
	}
	if diff := cmp.Diff([]string{"file:///a.txt"}, uris); diff != "" {
		t.Errorf("Resources() (-want +got):\n%s", diff)
	}
	if n := len(hub.Passthrough().ResourceTemplates(context.Background())); n != 0 {
		t.Errorf("ResourceTemplates() has %d entries, want none", n)
	}
	if got := resourceText(t, hub, "file:///a.txt"); got != "plain has file:///a.txt" {
		t.Errorf("ReadResource = %q", got)
	}
	if s := logs.String(); strings.Contains(s, "resources") {
		t.Errorf("logged a warning about resources, want none:\n%s", s)
	}
}

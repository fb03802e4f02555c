package upstream_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/upstream"
)

// TestServerScope: under WithServerScope, the servers out of scope are as
// absent: their tool, resource, template, prompt and completions give the
// errors of names no server has (the names swapped, the texts equal), a
// URI their template shares with a server in scope routes to the latter,
// and another caller's subscription to them is neither counted nor ended.
func TestServerScope(t *testing.T) {
	mk := func(name string) *watchingServer {
		w := &watchingServer{} // logs the subscriptions it is asked for
		w.Server = newServer(name, &mcp.ServerOptions{
			CompletionHandler: func(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
				return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{name}}}, nil
			},
			SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
				w.mu.Lock()
				defer w.mu.Unlock()
				w.log = append(w.log, "subscribe "+req.Params.URI)
				return nil
			},
			UnsubscribeHandler: func(_ context.Context, req *mcp.UnsubscribeRequest) error {
				w.mu.Lock()
				defer w.mu.Unlock()
				w.log = append(w.log, "unsubscribe "+req.Params.URI)
				return nil
			},
		}, "t")
		w.AddResource(&mcp.Resource{Name: "own", URI: name + "://own"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: name}}}, nil
		})
		w.AddResourceTemplate(&mcp.ResourceTemplate{Name: "any", URITemplate: "shared://{x}"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: name}}}, nil
		})
		w.AddPrompt(&mcp.Prompt{Name: "p"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: name}}}}, nil
		})
		return w
	}
	a, b := mk("alpha"), mk("beta")
	hub := startHub(t, &config.Config{Servers: map[string]config.Server{"alpha": memServer(a.Server), "beta": memServer(b.Server)}}, nil, nil)
	ctx := context.Background()
	onlyB := upstream.WithServerScope(ctx, func(s string) bool { return s == "beta" })

	errs := func(ctx context.Context, server string) map[string]string {
		out := map[string]string{}
		note := func(op string, err error) {
			s := "ok"
			if err != nil {
				s = strings.ReplaceAll(err.Error(), server, "X")
			}
			out[op] = s
		}
		_, err := hub.Call(ctx, server+"__t", nil)
		note("call", err)
		_, err = hub.Passthrough().ReadResource(ctx, server+"://own")
		note("read", err)
		_, err = hub.Passthrough().GetPrompt(ctx, server+"__p", nil)
		note("prompt", err)
		_, err = hub.Passthrough().Complete(ctx, upstream.Completion{Prompt: server + "__p", Argument: "x"})
		note("complete", err)
		note("subscribe", hub.Passthrough().Subscribe(ctx, server+"://own"))
		return out
	}
	if diff := cmp.Diff(errs(onlyB, "nosuch"), errs(onlyB, "alpha")); diff != "" {
		t.Errorf("server a out of scope differs from a server that does not exist (-nosuch +a):\n%s", diff)
	}
	want := map[string]string{"call": "ok", "read": "ok", "prompt": "ok", "complete": "ok", "subscribe": "ok"}
	if diff := cmp.Diff(want, errs(onlyB, "beta")); diff != "" {
		t.Errorf("server b in scope (-want +got):\n%s", diff)
	}

	// Both templates match shared://k: refused as ambiguous without a
	// scope, b's under one.
	if _, err := hub.Passthrough().ReadResource(ctx, "shared://k"); !errors.Is(err, upstream.ErrAmbiguousResource) {
		t.Errorf("shared://k without a scope: %v, want ErrAmbiguousResource", err)
	}
	raw, err := hub.Passthrough().ReadResource(onlyB, "shared://k")
	if err != nil || !strings.Contains(string(raw), `"text":"beta"`) {
		t.Errorf("shared://k in b's scope: %s, %v: want b's", raw, err)
	}

	// a's subscription, made by a caller who sees a, is none of b's
	// caller's: not ended by it, still there for its own.
	if err := hub.Passthrough().Subscribe(ctx, "alpha://own"); err != nil {
		t.Fatal(err)
	}
	if err := hub.Passthrough().Unsubscribe(onlyB, "alpha://own"); !errors.Is(err, upstream.ErrUnknownResource) {
		t.Errorf("unsubscribe of a's out of scope: %v, want ErrUnknownResource (not subscribed)", err)
	}
	if err := hub.Passthrough().Unsubscribe(ctx, "alpha://own"); err != nil {
		t.Errorf("unsubscribe of a's in scope: %v", err)
	}
	if diff := cmp.Diff([]string{"subscribe alpha://own", "unsubscribe alpha://own"}, a.asked()); diff != "" {
		t.Errorf("server a was asked (-want +got):\n%s", diff)
	}
}

// TestToolScope: under WithToolScope, Hub.Call asks the scope with the
// route it takes (the server, the qualified name, what changed since the
// tool was first seen) and calls only what it lets through; a refused
// tool gives the error of a name no server has. A tool the server
// changes is asked about with its change, from the listing that revealed
// it on; a name no server lists is not asked about.
func TestToolScope(t *testing.T) {
	srv := newServer("alpha", nil, "t", "u")
	got := make(changes, 16)
	hub := startHub(t, &config.Config{Servers: map[string]config.Server{"alpha": memServer(srv)}}, &upstream.HubOptions{Start: upstream.StartEager}, got.onChange)
	got.next(t)
	ctx := context.Background()
	var mu sync.Mutex
	var asked []upstream.ToolRoute
	onlyT := upstream.WithToolScope(ctx, func(r upstream.ToolRoute) bool {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, r)
		return r.Tool == "alpha__t" && r.Changed == nil
	})
	if res, err := hub.Call(onlyT, "alpha__t", nil); err != nil || res.Content != "alpha:t" {
		t.Errorf("alpha__t in scope: %q, %v", res.Content, err)
	}
	_, errU := hub.Call(onlyT, "alpha__u", nil)
	_, errNone := hub.Call(onlyT, "alpha__nosuch", nil)
	if !errors.Is(errU, upstream.ErrUnknownTool) || strings.ReplaceAll(errU.Error(), "alpha__u", "X") != strings.ReplaceAll(errNone.Error(), "alpha__nosuch", "X") {
		t.Errorf("alpha__u out of scope: %v; want the error of a tool no server has: %v", errU, errNone)
	}
	addTextTool(srv, "t", "Tool t, changed.", "alpha:t2")
	got.next(t)
	if _, err := hub.Call(onlyT, "alpha__t", nil); !errors.Is(err, upstream.ErrUnknownTool) {
		t.Errorf("alpha__t changed: %v, want refused", err)
	}
	if res, err := hub.Call(ctx, "alpha__t", nil); err != nil || res.Content != "alpha:t2" {
		t.Errorf("alpha__t without a scope: %q, %v", res.Content, err)
	}
	want := []upstream.ToolRoute{
		{Server: "alpha", Tool: "alpha__t"},
		{Server: "alpha", Tool: "alpha__u"},
		{Server: "alpha", Tool: "alpha__t", Changed: []string{"description"}},
	}
	if diff := cmp.Diff(want, asked); diff != "" {
		t.Errorf("routes asked (-want +got):\n%s", diff)
	}
}

// BenchmarkCallScope: one Hub.Call of an in-process server's tool, without
// a scope and under a WithToolScope that lets it through: what asking the
// scope where the Hub routes adds to a call.
func BenchmarkCallScope(b *testing.B) {
	srv := newServer("alpha", nil, "t")
	hub := startHub(b, &config.Config{Servers: map[string]config.Server{"alpha": memServer(srv)}}, &upstream.HubOptions{Start: upstream.StartEager}, nil)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		ctx  context.Context
	}{
		{"none", ctx},
		{"tool-scope", upstream.WithToolScope(ctx, func(r upstream.ToolRoute) bool { return r.Changed == nil && r.Server == "alpha" })},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := hub.Call(c.ctx, "alpha__t", nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package upstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/upstream"
)

// TestNPMEverythingPassthrough runs what a proxy forwards against the
// reference server-everything, over stdio and streamable HTTP: raw
// results, output schemas, progress, cancellation, resources, prompts,
// and its sampling, elicitation and roots requests.
func TestNPMEverythingPassthrough(t *testing.T) {
	dir := requireNPMServers(t)
	checkGoroutines(t)
	checkNoChildren(t)
	addr := startEverything(t, dir, "streamableHttp")
	for _, tt := range []struct {
		name   string
		server map[string]any
	}{
		{"stdio", map[string]any{"command": "node", "args": []string{"node_modules/@modelcontextprotocol/server-everything/dist/index.js", "stdio"}, "cwd": dir}},
		{"streamable HTTP", map[string]any{"url": "http://" + addr + "/mcp", "type": "http"}},
	} {
		t.Run(tt.name, func(t *testing.T) { testEverythingPassthrough(t, tt.server) })
	}
}

func testEverythingPassthrough(t *testing.T, server map[string]any) {
	a := &answerer{
		caps: upstream.ClientCapabilities{Sampling: true, Elicitation: true, Roots: true},
		answers: map[string]string{
			upstream.MethodCreateMessage: `{"role":"assistant","content":{"type":"text","text":"sampled by the test"},"model":"test-model-7"}`,
			upstream.MethodElicit:        `{"action":"accept","content":{"name":"Ada Lovelace"}}`,
			upstream.MethodListRoots:     `{"roots":[{"uri":"file:///srv/project-x","name":"project-x"}]}`,
		},
	}
	cfg := writeConfig(t, t.TempDir(), map[string]any{"everything": server})
	ch := make(changes, 16)
	hub := startHub(t, cfg, &upstream.HubOptions{Timeout: waitLimit(), ClientRequests: a}, ch.onChange)
	// It registers the tools that need client capabilities once
	// initialized, and says so with tools/list_changed.
	for !slices.Contains(toolNames(hub.Tools()), "everything__trigger-sampling-request") {
		ch.next(t)
	}
	ctx := context.Background()
	call := func(ctx context.Context, name, args string) (res struct {
		Content           []map[string]any `json:"content"`
		StructuredContent json.RawMessage  `json:"structuredContent"`
		IsError           bool             `json:"isError"`
	}) {
		t.Helper()
		r, err := hub.Call(ctx, name, json.RawMessage(args))
		if err != nil {
			t.Fatalf("Call(%s): %v", name, err)
		}
		if err := json.Unmarshal(r.Raw, &res); err != nil {
			t.Fatalf("Call(%s): Raw %s: %v", name, r.Raw, err)
		}
		return res
	}
	text := func(blocks []map[string]any) string {
		var out []string
		for _, b := range blocks {
			if s, ok := b["text"].(string); ok {
				out = append(out, s)
			}
		}
		return strings.Join(out, "\n")
	}

	t.Run("raw results and output schema", func(t *testing.T) {
		img := call(ctx, "everything__get-tiny-image", `{}`)
		if i := slices.IndexFunc(img.Content, func(b map[string]any) bool { return b["type"] == "image" }); i < 0 ||
			img.Content[i]["mimeType"] != "image/png" || len(img.Content[i]["data"].(string)) < 100 {
			t.Errorf("get-tiny-image raw content %v: want the image block with its base64 data", img.Content)
		}
		ann := call(ctx, "everything__get-annotated-message", `{"messageType":"error","includeImage":true}`)
		if len(ann.Content) == 0 || ann.Content[0]["annotations"] == nil {
			t.Errorf("get-annotated-message raw content %v: want its annotations", ann.Content)
		}
		sc := call(ctx, "everything__get-structured-content", `{"location":"Chicago"}`)
		if !strings.Contains(string(sc.StructuredContent), "temperature") {
			t.Errorf("get-structured-content structuredContent = %s", sc.StructuredContent)
		}
		i := slices.IndexFunc(hub.Tools(), func(t2 tool.Tool) bool { return t2.Name == "everything__get-structured-content" })
		if i < 0 || !strings.Contains(string(hub.Tools()[i].OutputSchema), "temperature") {
			t.Errorf("get-structured-content has no output schema with temperature")
		}
	})

	t.Run("progress", func(t *testing.T) {
		var mu sync.Mutex
		var got []upstream.CallProgress
		pctx := upstream.WithProgress(ctx, func(p upstream.CallProgress) {
			mu.Lock()
			got = append(got, p)
			mu.Unlock()
		})
		call(pctx, "everything__trigger-long-running-operation", `{"duration":1.5,"steps":3}`)
		mu.Lock()
		defer mu.Unlock()
		// The last notice comes just before the result and may be
		// dropped (see WithProgress); the others are half a second
		// ahead of it.
		want := []upstream.CallProgress{{1, 3, ""}, {2, 3, ""}, {3, 3, ""}}
		if len(got) < 2 || len(got) > 3 {
			t.Fatalf("progress = %+v, want %+v or all but the last", got, want)
		}
		if diff := cmp.Diff(want[:len(got)], got); diff != "" {
			t.Errorf("progress (-want +got):\n%s", diff)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		first := make(chan struct{})
		var once sync.Once
		pctx := upstream.WithProgress(cctx, func(upstream.CallProgress) { once.Do(func() { close(first) }) })
		errc := make(chan error, 1)
		go func() {
			_, err := hub.Call(pctx, "everything__trigger-long-running-operation", json.RawMessage(`{"duration":60,"steps":600}`))
			errc <- err
		}()
		<-first // the server is working on it
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled call: %v, want context.Canceled", err)
		}
		// The session is fine afterwards.
		if got := text(call(ctx, "everything__echo", `{"message":"still here"}`).Content); !strings.Contains(got, "still here") {
			t.Errorf("echo after a cancel = %q", got)
		}
	})

	t.Run("resources", func(t *testing.T) {
		if len(hub.Passthrough().Resources(context.Background())) == 0 {
			t.Error("no resources listed")
		}
		if !slices.ContainsFunc(hub.Passthrough().ResourceTemplates(context.Background()), func(r upstream.ResourceTemplate) bool {
			return r.URITemplate == "demo://resource/dynamic/text/{resourceId}" && r.Name == upstream.QualifiedName("everything", r.OriginalName)
		}) {
			t.Errorf("no dynamic text template among %+v", hub.Passthrough().ResourceTemplates(context.Background()))
		}
		links := call(ctx, "everything__get-resource-links", `{"count":2}`)
		var uris []string
		for _, b := range links.Content {
			if b["type"] == "resource_link" {
				uris = append(uris, b["uri"].(string))
			}
		}
		if len(uris) != 2 {
			t.Fatalf("get-resource-links gave %v", links.Content)
		}
		for _, uri := range uris {
			raw, err := hub.Passthrough().ReadResource(ctx, uri)
			if err != nil {
				t.Errorf("ReadResource(%s): %v", uri, err)
				continue
			}
			var res struct {
				Contents []struct{ URI, Text, Blob string }
			}
			if err := json.Unmarshal(raw, &res); err != nil || len(res.Contents) != 1 || res.Contents[0].URI != uri || res.Contents[0].Text+res.Contents[0].Blob == "" {
				t.Errorf("ReadResource(%s) = %s", uri, raw)
			}
		}
	})

	t.Run("prompts", func(t *testing.T) {
		if !slices.ContainsFunc(hub.Passthrough().Prompts(context.Background()), func(p upstream.Prompt) bool { return p.Name == "everything__args-prompt" && len(p.Arguments) == 2 }) {
			t.Errorf("no args-prompt with two arguments among %+v", hub.Passthrough().Prompts(context.Background()))
		}
		raw, err := hub.Passthrough().GetPrompt(ctx, "everything__args-prompt", map[string]string{"city": "Paris"})
		if err != nil || !strings.Contains(string(raw), "What's weather in Paris?") {
			t.Errorf("GetPrompt(args-prompt) = %s, %v", raw, err)
		}
	})

	t.Run("sampling", func(t *testing.T) {
		got := text(call(ctx, "everything__trigger-sampling-request", `{"prompt":"hello","maxTokens":5}`).Content)
		if !strings.Contains(got, "sampled by the test") || !strings.Contains(got, "test-model-7") {
			t.Errorf("sampling result %q: the handler's answer did not reach the server", got)
		}
		checkAsked(t, a, upstream.MethodCreateMessage, "everything__trigger-sampling-request", "hello")
	})

	t.Run("elicitation", func(t *testing.T) {
		got := text(call(ctx, "everything__trigger-elicitation-request", `{}`).Content)
		if !strings.Contains(got, "Ada Lovelace") {
			t.Errorf("elicitation result %q: the handler's answer did not reach the server", got)
		}
		checkAsked(t, a, upstream.MethodElicit, "everything__trigger-elicitation-request", "requestedSchema")
	})

	t.Run("roots", func(t *testing.T) {
		got := text(call(ctx, "everything__get-roots-list", `{}`).Content)
		if !strings.Contains(got, "file:///srv/project-x") {
			t.Errorf("get-roots-list = %q, want the handler's root", got)
		}
	})
}

// checkAsked checks that the handler was asked method for call, with
// params that mention want.
func checkAsked(t *testing.T, a *answerer, method, call, want string) {
	t.Helper()
	got, _ := a.requests()
	for _, r := range got {
		if r.Method == method {
			if r.Server != "everything" || r.Call != call || !strings.Contains(string(r.Params), want) {
				t.Errorf("%s request = %+v, want from everything for %s with %q in its params", method, r, call, want)
			}
			return
		}
	}
	t.Errorf("the handler was never asked %s (asked: %+v)", method, got)
}

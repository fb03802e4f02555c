package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/store"
)

// rawListen opens a subscriptions/listen stream of MCP 2026-07-28 at url
// as user (X-Test-User, asMember's), for resources/list_changed and
// updates of uris, and returns what it hears, in the order the stream
// carries it: "acknowledged", "list_changed", "updated URI", or
// "error MESSAGE" for an error answer. One stream carries both kinds, so
// that a list change heard after an update is heard after it. stop ends
// the stream (the client goes away), as the test's end does.
func rawListen(t *testing.T, url, user string, uris ...string) (heard <-chan string, stop func()) {
	t.Helper()
	params := map[string]any{
		"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		},
		"notifications": map[string]any{"resourcesListChanged": true, "resourceSubscriptions": uris},
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": params})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	req.Header.Set("X-Test-User", user)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	events := make(chan string, 64)
	done := make(chan struct{})
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	go func() {
		defer close(done)
		defer resp.Body.Close()
		emit := func(data string) {
			var m struct {
				Method string `json:"method"`
				Params struct {
					URI string `json:"uri"`
				} `json:"params"`
				Error *struct {
					Message string `json:"message"`
				} `json:"error"`
			}
			if json.Unmarshal([]byte(data), &m) != nil {
				events <- "unreadable " + data
				return
			}
			switch {
			case m.Error != nil:
				events <- "error " + m.Error.Message
			case m.Method == "notifications/subscriptions/acknowledged":
				events <- "acknowledged"
			case m.Method == "notifications/resources/list_changed":
				events <- "list_changed"
			case m.Method == "notifications/resources/updated":
				events <- "updated " + m.Params.URI
			case m.Method != "":
				events <- m.Method
			}
		}
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			var b strings.Builder
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				b.WriteString(sc.Text())
			}
			emit(b.String())
			return
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				emit(data)
			}
		}
	}()
	return events, stop
}

// next returns the next thing a stream (rawListen's, or a channel of
// the same words) hears.
func next(t *testing.T, heard <-chan string, who string) string {
	t.Helper()
	select {
	case s := <-heard:
		return s
	case <-time.After(testenv.WaitLimit()):
		t.Fatalf("%s heard nothing", who)
		return ""
	}
}

// TestListenSubscriptionsScoped: a 2026-07-28 subscriptions/listen stream
// is held to its caller's scope as resources/subscribe of 2025-11-25 is:
// a resource of a server out of scope is refused with the answer for a
// resource that does not exist (and its server is never asked); an update
// reaches a stream only from a server of its caller's scope, even when
// another server out of it lists the same URI; and a policy changed under
// live streams and sessions stops the updates of what left their scope.
func TestListenSubscriptionsScoped(t *testing.T) {
	ctx := context.Background()
	asked := make(chan string, 64)
	ups := map[string]*mcp.Server{}
	cfg := &config.Config{Servers: map[string]config.Server{}}
	for _, name := range []string{"math", "text"} {
		up := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ServerOptions{
			SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
				asked <- name + " subscribe " + req.Params.URI
				return nil
			},
			UnsubscribeHandler: func(_ context.Context, req *mcp.UnsubscribeRequest) error {
				asked <- name + " unsubscribe " + req.Params.URI
				return nil
			},
		})
		up.AddTool(&mcp.Tool{Name: "t", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
		for _, uri := range []string{name + "://readme", "shared://doc"} {
			up.AddResource(&mcp.Resource{URI: uri, Name: "r"}, textResource(name))
		}
		ups[name] = up
		cfg.Servers[name] = dialed(up)
	}
	policy := func(src string) *config.Policy {
		pol, err := config.ParsePolicy("policy.json", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		return pol
	}
	gw, err := gateway.Open(ctx, cfg, &gateway.Options{
		Toolset: toolsift.Options{NoSemantic: true, Store: store.NewMemory()},
		Policy:  policy(`{"rules": [{"teams": ["a"], "allow": ["math"]}, {"teams": ["b", "c"], "allow": ["text"]}]}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	srv := httptest.NewServer(asMember(gw.Handler()))
	t.Cleanup(srv.Close)
	noAsk := func(when string) {
		t.Helper()
		select {
		case a := <-asked:
			t.Errorf("%s: an upstream was asked %q", when, a)
		default:
		}
	}
	wantAsk := func(want string) {
		t.Helper()
		if got := next(t, asked, "the upstreams"); got != want {
			t.Errorf("the upstreams were asked %q, want %q", got, want)
		}
	}

	// The 2025-11-25 wire: bob (team b, text) subscribing to math's
	// resource gets the answer for a resource no server has.
	bob25Heard := make(chan string, 16)
	bob25 := connectAs(t, srv.URL, "bob:b", "2025-11-25", func(o *mcp.ClientOptions) {
		o.ResourceUpdatedHandler = func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			bob25Heard <- "updated " + r.Params.URI
		}
		o.ResourceListChangedHandler = func(context.Context, *mcp.ResourceListChangedRequest) { bob25Heard <- "list_changed" }
	})
	norm := func(s, uri string) string { return strings.ReplaceAll(s, uri, "X") }
	err25 := norm(errString(bob25.Subscribe(ctx, &mcp.SubscribeParams{URI: "math://readme"})), "math://readme")
	if none := norm(errString(bob25.Subscribe(ctx, &mcp.SubscribeParams{URI: "nosuch://readme"})), "nosuch://readme"); err25 != none || err25 == "no error" {
		t.Fatalf("2025-11-25: bob's subscription to math's resource: %q; to none: %q", err25, none)
	}
	noAsk("bob's 2025-11-25 subscription to math's resource")

	// The 2026-07-28 wire refuses it the same way, and asks no upstream.
	for _, uri := range []string{"math://readme", "nosuch://readme"} {
		heard, _ := rawListen(t, srv.URL, "bob:b", "text://readme", uri)
		got := next(t, heard, "bob's listen stream")
		if want := "error " + strings.TrimPrefix(err25, "calling \"resources/subscribe\": "); norm(got, uri) != want {
			t.Errorf("bob's listen stream with %s: %q, want %q (the 2025-11-25 answer)", uri, norm(got, uri), want)
		}
	}
	// (text://readme, subscribed first on each refused stream, is
	// unsubscribed as the stream fails.)
	for range 2 {
		wantAsk("text subscribe text://readme")
		wantAsk("text unsubscribe text://readme")
	}
	noAsk("bob's listen streams naming math's resource")

	// In scope: bob's and carol's streams (text's resources; shared://doc
	// is text's to them), alice's (math's; shared://doc is math's to her).
	bob, _ := rawListen(t, srv.URL, "bob:b", "text://readme", "shared://doc")
	carol, _ := rawListen(t, srv.URL, "carol:c", "text://readme")
	alice, aliceStop := rawListen(t, srv.URL, "alice:a", "math://readme", "shared://doc")
	for who, heard := range map[string]<-chan string{"bob": bob, "carol": carol, "alice": alice} {
		if got := next(t, heard, who); got != "acknowledged" {
			t.Fatalf("%s's listen stream: %q, want acknowledged", who, got)
		}
	}
	if err := bob25.Subscribe(ctx, &mcp.SubscribeParams{URI: "text://readme"}); err != nil {
		t.Fatal(err)
	}
	drain := func(ch chan string) {
		for range len(asked) {
			<-ch
		}
	}
	drain(asked)

	// text's shared://doc changes: bob hears it, alice (who subscribed to
	// math's) does not; then math's readme, which alice hears next.
	if err := ups["text"].ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "shared://doc"}); err != nil {
		t.Fatal(err)
	}
	if got := next(t, bob, "bob"); got != "updated shared://doc" {
		t.Errorf("bob heard %q, want text's shared://doc updated", got)
	}
	if err := ups["math"].ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "math://readme"}); err != nil {
		t.Fatal(err)
	}
	if got := next(t, alice, "alice"); got != "updated math://readme" {
		t.Errorf("alice heard %q first, want math://readme updated: text's shared://doc is out of her scope", got)
	}

	// The policy changes under the live streams: bob (team b) loses text
	// for math, carol keeps text.
	if _, err := gw.SetPolicy(policy(`{"rules": [{"teams": ["a", "b"], "allow": ["math"]}, {"teams": ["c"], "allow": ["text"]}]}`)); err != nil {
		t.Fatal(err)
	}
	if got := next(t, bob, "bob"); got != "list_changed" {
		t.Fatalf("bob heard %q after the new policy, want list_changed", got)
	}
	if got := next(t, bob25Heard, "bob's 2025-11-25 session"); got != "list_changed" {
		t.Fatalf("bob's 2025-11-25 session heard %q after the new policy, want list_changed", got)
	}
	if err := ups["text"].ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "text://readme"}); err != nil {
		t.Fatal(err)
	}
	if got := next(t, carol, "carol"); got != "updated text://readme" {
		t.Errorf("carol heard %q, want text://readme updated", got)
	}
	// Then a resource bob may see joins: the next thing he hears, on the
	// stream and the session, is that, not text's update.
	ups["math"].AddResource(&mcp.Resource{URI: "math://new", Name: "new"}, textResource("math"))
	if got := next(t, bob, "bob"); got != "list_changed" {
		t.Errorf("bob's stream heard %q after text left his scope, want only math's new resource (list_changed)", got)
	}
	if got := next(t, bob25Heard, "bob's 2025-11-25 session"); got != "list_changed" {
		t.Errorf("bob's 2025-11-25 session heard %q after text left his scope, want only math's new resource (list_changed)", got)
	}

	// Alice's client goes away: her stream's subscriptions, the only
	// ones at math, end there.
	drain(asked)
	aliceStop()
	got := map[string]bool{}
	for range 2 {
		got[next(t, asked, "the upstreams, after alice left")] = true
	}
	if !got["math unsubscribe math://readme"] || !got["math unsubscribe shared://doc"] {
		t.Errorf("after alice's stream ended the upstreams were asked %v, want math to unsubscribe both", got)
	}
}

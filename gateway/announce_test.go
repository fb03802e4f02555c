package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/store"
)

// TestPolicyQuietsAnnouncements (issue 33): on the server of 2026-07-28
// shared by every caller, a tool list change of math (a pinned tool
// joins; math says its tools changed while its list stays the same) is
// announced on alice's listen stream (team a sees math) and not on bob's
// (team b sees text only); a change of text reaches bob, and not alice.
// go-sdk clients, listening for tools, resources and prompts.
//
// "Not heard" is proved as in TestPolicyQuietsFeatureAnnouncements, by
// order: once the caller in scope has heard a tool change, the server of
// the caller out of scope changes its prompts or resources, and that is
// the first thing this caller hears (a stray tools announcement would
// come before it). Each such change is in turn one that the first caller
// must not hear: the next thing it must hear comes after it, and is of
// another kind.
func TestPolicyQuietsAnnouncements(t *testing.T) {
	_, ups, url := featureGateway(t, true)
	change := changer(ups)

	_, alice, _, bob := aliceAndBob(t, url, change)

	what := change("math", "tools", "") // a pinned tool joins
	hearNext(t, alice, "alice:a", "tools", what)
	hearNext(t, bob, "bob:b", "prompts", change("text", "prompts", "")+", after "+what)
	what = change("math", "tools", "said") // math said its tools changed, same list
	hearNext(t, alice, "alice:a", "tools", what)
	hearNext(t, bob, "bob:b", "resources", change("text", "resources", "")+", after "+what)
	what = change("text", "tools", "")
	hearNext(t, bob, "bob:b", "tools", what)
	hearNext(t, alice, "alice:a", "prompts", change("math", "prompts", "")+", after "+what)
	// bob heard none of alice's prompts either.
	hearNext(t, bob, "bob:b", "resources", change("text", "resources", "")+", after math's prompts changed")
}

// TestPolicyQuietsFeatureAnnouncements: on the server of 2026-07-28 shared
// by every caller, a change of math's resources, templates or prompts is
// announced (resources/list_changed, prompts/list_changed) on alice's
// listen stream (team a sees math) and not on bob's (team b sees text
// only), and a change of text's reaches bob and not alice; a resource of
// text's under the URI of math's (which namespaces both on the shared
// server, while alice is still answered math's under its plain URI) is
// not announced to alice either. Without a policy both hear every change.
// go-sdk clients, listening for resources and prompts.
//
// A stream's announcements arrive in order, so "not heard" is proved by
// the next change the stream must hear: it is the first thing heard after
// the change out of scope, and of the other kind, so that it cannot be
// the announcement that must not come (nor let one of that kind through
// in its place).
func TestPolicyQuietsFeatureAnnouncements(t *testing.T) {
	const r, p = "resources", "prompts"
	// step is a change of server's (how: "" a new resource or prompt,
	// "template" a new resource template, "clash" a resource under the
	// URI of the other server's, "redefine" its resource described anew),
	// whose caller hears kind first.
	type step struct{ server, kind, how string }
	for _, tc := range []struct {
		name  string
		warm  string // the kind of the warm-up's changes
		steps []step
	}{
		// Not heard: the warm-up's text prompt (by alice), text's
		// prompts (by alice), math's resources (by bob).
		{"text prompts, math resources", p, []step{{"text", p, ""}, {"math", r, ""}, {"text", p, ""}}},
		// The warm-up's text resource and text's resources (by alice),
		// math's prompts (by bob).
		{"math prompts, text resources", r, []step{{"math", p, ""}, {"text", r, ""}, {"math", p, ""}}},
		// text's clash (by alice), math's prompts and redefinition (by
		// bob), text's template (by alice), math's template (by bob).
		{"clash, definition, templates", r, []step{
			{"text", r, "clash"}, {"math", p, ""}, {"math", r, "redefine"}, {"text", p, ""},
			{"text", r, "template"}, {"math", p, ""}, {"math", r, "template"}, {"text", p, ""}}},
		{"no policy", r, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scoped := tc.steps != nil
			_, ups, url := featureGateway(t, scoped)
			owner := map[string]string{"math": "alice:a", "text": "bob:b"}
			heard := map[string]chan string{}
			next := func(user, want, after string) {
				t.Helper()
				hearNext(t, heard[user], user, want, after)
			}
			change := changer(ups)

			// The listen streams are open once a change reaches them:
			// alice's first, then bob's, whose change alice hears only
			// without a policy.
			_, heard["alice:a"] = listening(t, url, "alice:a", false)
			next("alice:a", tc.warm, change("math", tc.warm, ""))
			_, heard["bob:b"] = listening(t, url, "bob:b", false)
			what := change("text", tc.warm, "")
			next("bob:b", tc.warm, what)
			if !scoped {
				next("alice:a", tc.warm, what)
				for _, server := range []string{"math", "text"} {
					for _, kind := range []string{r, p} {
						what := change(server, kind, "")
						next("alice:a", kind, what)
						next("bob:b", kind, what)
					}
				}
				return
			}
			for _, s := range tc.steps {
				next(owner[s.server], s.kind, change(s.server, s.kind, s.how))
			}
		})
	}
}

// TestPolicyChangeAnnounced: on the server of 2026-07-28 shared by every
// caller, a new policy (SetPolicy) is announced on the listen stream of a
// caller whose visible lists changed with it, one list_changed of each
// kind (tools, resources, prompts), and its next lists are the new
// scope's; a caller whose lists did not change hears nothing. The shared
// server registers every server's items whatever the policy, so the SDK
// alone would tell nobody. Steps: alice's scope widened to text (bob's
// server), then narrowed back; the policy removed (both callers see
// more), then set again (both see less: what they heard without a policy
// is not what their prints say). go-sdk clients, listening for all three.
//
// "Nothing heard" is proved as in TestPolicyQuietsFeatureAnnouncements:
// once the caller that must hear the new policy has heard it, bob's
// server changes its prompts, then its resources, and these are the first
// two things bob hears (a stray tools or resources announcement would
// come before the prompts, a stray prompts one before the resources).
func TestPolicyChangeAnnounced(t *testing.T) {
	const widened = `{"rules": [
	  {"teams": ["a"], "allow": ["math", "text"]},
	  {"teams": ["b"], "allow": ["text"]},
	]}`
	gw, ups, url := featureGateway(t, true)
	change := changer(ups)

	alice, aliceHeard, bob, bobHeard := aliceAndBob(t, url, change)

	set := func(src string) {
		t.Helper()
		var pol *config.Policy
		if src != "" {
			var err error
			if pol, err = config.ParsePolicy("policy.json", []byte(src)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := gw.SetPolicy(pol); err != nil {
			t.Fatal(err)
		}
	}
	// hearsAll: one list_changed of each kind, in any order.
	hearsAll := func(heard chan string, user, after string) {
		t.Helper()
		got := map[string]bool{}
		for range kindsHeard {
			select {
			case k := <-heard:
				if got[k] {
					t.Fatalf("%s heard %s list_changed twice after %s", user, k, after)
				}
				got[k] = true
			case <-time.After(testenv.WaitLimit()):
				t.Fatalf("%s heard only %v list_changed after %s, want tools, resources and prompts", user, got, after)
			}
		}
	}
	// lists checks that c's lists hold the tool, resource and prompt of
	// each server of servers, and not those of the other.
	lists := func(c *client, user, after string, servers ...string) {
		t.Helper()
		ctx := context.Background()
		seen := map[string]bool{}
		tools, err := c.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range tools.Tools {
			seen[x.Name] = true
		}
		res, err := c.ListResources(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range res.Resources {
			seen[x.URI] = true
		}
		prompts, err := c.ListPrompts(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range prompts.Prompts {
			seen[x.Name] = true
		}
		for _, server := range []string{"math", "text"} {
			want := slices.Contains(servers, server)
			for _, item := range []string{server + "__first", server + "://readme", server + "__explain"} {
				if seen[item] != want {
					t.Errorf("after %s, %s lists %s: %v, want %v", after, user, item, seen[item], want)
				}
			}
		}
	}
	// bobDeaf proves that bob heard nothing since the last thing it heard
	// (see above); alice hears text's changes too when she sees text.
	bobDeaf := func(after string, aliceSeesText bool) {
		t.Helper()
		for _, kind := range []string{"prompts", "resources"} {
			what := change("text", kind, "") + ", after " + after
			hearNext(t, bobHeard, "bob:b", kind, what)
			if aliceSeesText {
				hearNext(t, aliceHeard, "alice:a", kind, what)
			}
		}
	}
	lists(alice, "alice:a", "listening", "math")
	lists(bob, "bob:b", "listening", "text")

	set(widened)
	what := "alice's scope widened to text"
	hearsAll(aliceHeard, "alice:a", what)
	bobDeaf(what, true)
	lists(alice, "alice:a", what, "math", "text")
	lists(bob, "bob:b", what, "text")

	set(testPolicy)
	what = "alice's scope narrowed to math"
	hearsAll(aliceHeard, "alice:a", what)
	bobDeaf(what, false)
	lists(alice, "alice:a", what, "math")
	lists(bob, "bob:b", what, "text")

	set("")
	what = "the policy removed"
	hearsAll(aliceHeard, "alice:a", what)
	hearsAll(bobHeard, "bob:b", what)
	lists(alice, "alice:a", what, "math", "text")
	lists(bob, "bob:b", what, "math", "text")

	set(testPolicy)
	what = "the policy set again"
	hearsAll(aliceHeard, "alice:a", what)
	hearsAll(bobHeard, "bob:b", what)
	lists(alice, "alice:a", what, "math")
	lists(bob, "bob:b", what, "text")
}

// kindsHeard are the kinds of list_changed listening hears.
var kindsHeard = []string{"tools", "resources", "prompts"}

// featureGateway serves math and text (a tool, a resource and a prompt
// each; in memory, so that the test changes them; every tool pinned, so
// that the shared server lists both servers' tools) under testPolicy, or
// under none.
func featureGateway(t *testing.T, scoped bool) (*gateway.Gateway, map[string]*mcp.Server, string) {
	t.Helper()
	ups := map[string]*mcp.Server{}
	cfg := &config.Config{Servers: map[string]config.Server{}}
	for _, name := range []string{"math", "text"} {
		up := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)
		up.AddTool(&mcp.Tool{Name: "first", Description: "The first.", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
		up.AddResource(&mcp.Resource{URI: name + "://readme", Name: "readme"}, textResource(name))
		up.AddPrompt(&mcp.Prompt{Name: "explain"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		})
		ups[name] = up
		cfg.Servers[name] = dialed(up)
	}
	var pol *config.Policy
	if scoped {
		var err error
		if pol, err = config.ParsePolicy("policy.json", []byte(testPolicy)); err != nil {
			t.Fatal(err)
		}
	}
	gw, err := gateway.Open(context.Background(), cfg, &gateway.Options{
		Toolset: toolsift.Options{NoSemantic: true, Store: store.NewMemory(), Pin: []string{"*"}}, Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	srv := httptest.NewServer(asMember(gw.Handler()))
	t.Cleanup(srv.Close)
	return gw, ups, srv.URL
}

// listening connects user over 2026-07-28, listening for resource and
// prompt list changes (and tools' if tools), and returns the client and
// what its stream hears, in order: "tools", "resources" or "prompts".
func listening(t *testing.T, url, user string, tools bool) (*client, chan string) {
	t.Helper()
	heard := make(chan string, 64)
	c := connectAs(t, url, user, "2026-07-28", func(o *mcp.ClientOptions) {
		o.ToolListChangedHandler = nil
		if tools {
			o.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) { heard <- "tools" }
		}
		o.ResourceListChangedHandler = func(context.Context, *mcp.ResourceListChangedRequest) { heard <- "resources" }
		o.PromptListChangedHandler = func(context.Context, *mcp.PromptListChangedRequest) { heard <- "prompts" }
	})
	if v := c.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %s, want 2026-07-28", v)
	}
	return c, heard
}

// aliceAndBob connects alice (team a, who sees math) and bob (team b, who
// sees text) to featureGateway's url with 2026-07-28 clients listening
// for every kind, and returns once both streams are open: a change of
// each one's server has reached it, alice's first (she does not see
// text).
func aliceAndBob(t *testing.T, url string, change func(server, kind, how string) string) (alice *client, aliceHeard chan string, bob *client, bobHeard chan string) {
	t.Helper()
	alice, aliceHeard = listening(t, url, "alice:a", true)
	hearNext(t, aliceHeard, "alice:a", "resources", change("math", "resources", ""))
	bob, bobHeard = listening(t, url, "bob:b", true)
	hearNext(t, bobHeard, "bob:b", "resources", change("text", "resources", ""))
	return alice, aliceHeard, bob, bobHeard
}

// hearNext waits for the next list_changed that user's stream (heard, as
// listening returns it) hears, which must be of kind want ("tools",
// "resources" or "prompts"), after what happened (after): one of another
// kind heard first is a change it should not have heard.
func hearNext(t *testing.T, heard chan string, user, want, after string) {
	t.Helper()
	select {
	case got := <-heard:
		if got != want {
			t.Fatalf("%s heard %s list_changed first after %s, want %s: it heard a change out of its scope", user, got, after, want)
		}
	case <-time.After(testenv.WaitLimit()):
		t.Fatalf("%s heard no %s list_changed after %s", user, want, after)
	}
}

// changer returns a func that changes server's list of kind ("tools",
// "resources" or "prompts") among ups (featureGateway's), by adding an
// item of a new name (how: "" a new tool, resource or prompt, "template"
// a new resource template, "clash" a resource under the URI of the other
// server's, "redefine" its resource described anew, "said" the tool it
// added last to server, which it must have, registered again as it is,
// so that server says its tools changed while its list stays the same), and says what it
// did.
func changer(ups map[string]*mcp.Server) func(server, kind, how string) string {
	other := map[string]string{"math": "text", "text": "math"}
	lastTool := map[string]string{} // the tool changer added last to each server
	n := 0
	return func(server, kind, how string) string {
		n++
		name := fmt.Sprintf("added%d", n)
		switch {
		case kind == "tools":
			if how == "said" {
				name = lastTool[server]
			}
			lastTool[server] = name
			ups[server].AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return &mcp.CallToolResult{}, nil
				})
		case kind == "prompts":
			ups[server].AddPrompt(&mcp.Prompt{Name: name}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return &mcp.GetPromptResult{}, nil
			})
		case how == "template":
			ups[server].AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: server + "://" + name + "/{key}", Name: name}, textResource(server))
		case how == "clash":
			ups[server].AddResource(&mcp.Resource{URI: other[server] + "://readme", Name: "readme"}, textResource(server))
		case how == "redefine":
			ups[server].AddResource(&mcp.Resource{URI: server + "://readme", Name: "readme", Description: name}, textResource(server))
		default:
			ups[server].AddResource(&mcp.Resource{URI: server + "://" + name, Name: name}, textResource(server))
		}
		if how != "" {
			name += ", " + how
		}
		return fmt.Sprintf("%s's %s changed (%s)", server, kind, name)
	}
}

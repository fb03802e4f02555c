package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/gateway/authn"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/store"
)

// asMember stands for an authenticating middleware: X-Test-User
// "alice:a" is user alice of team a.
func asMember(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := r.Header.Get("X-Test-User"); h != "" {
			user, team, _ := strings.Cut(h, ":")
			r = r.WithContext(authn.WithIdentity(r.Context(), authn.Identity{User: user, Teams: []string{team}}))
		}
		next.ServeHTTP(w, r)
	})
}

// scopedServers are two upstream servers with tools, a resource, a
// template, a prompt and completions each: math (team a's) and text
// (team b's).
func scopedServers(t *testing.T) *config.Config {
	t.Helper()
	server := func(name string, tools map[string]string) config.Server {
		s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ServerOptions{
			CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
				return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{name + ":" + req.Params.Argument.Value}}}, nil
			},
			SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
			UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
		})
		for tn, desc := range tools {
			s.AddTool(&mcp.Tool{Name: tn, Description: desc, InputSchema: map[string]any{"type": "object"}},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + "." + tn}}}, nil
				})
		}
		s.AddResource(&mcp.Resource{URI: name + "://readme", Name: "readme"}, textResource(name))
		s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: name + "://doc/{key}", Name: "doc"}, textResource(name))
		s.AddPrompt(&mcp.Prompt{Name: "explain", Arguments: []*mcp.PromptArgument{{Name: "topic"}}},
			func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: name}}}}, nil
			})
		return dialed(s)
	}
	return &config.Config{Servers: map[string]config.Server{
		"math": server("math", map[string]string{
			"add":    "Add two numbers and return their sum.",
			"divide": "Divide one number by another.",
		}),
		"text": server("text", map[string]string{
			"upper":       "Convert a text to upper case.",
			"count_words": "Count the words of a text.",
		}),
	}}
}

const testPolicy = `{
  // team a: math, but not its divide; team b: text
  "rules": [
    {"teams": ["a"], "allow": ["math"], "deny": ["math__divide"]},
    {"teams": ["b"], "allow": ["text"]},
  ],
  "anonymous": {"allow": ["text__upper"]}
}`

// policyGateway serves scopedServers under testPolicy, every tool pinned
// (so that the fixed list of 2026-07-28 holds tools of both servers).
func policyGateway(t *testing.T) (*gateway.Gateway, *httptest.Server) {
	t.Helper()
	pol, err := config.ParsePolicy("policy.json", []byte(testPolicy))
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.Open(context.Background(), scopedServers(t), &gateway.Options{
		Toolset: toolsift.Options{NoSemantic: true, Store: store.NewMemory(), Pin: []string{"*"}},
		Policy:  pol,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	if w := gw.Warnings(); len(w) > 0 {
		t.Errorf("Warnings() = %q, want none", w)
	}
	srv := httptest.NewServer(asMember(gw.Handler()))
	t.Cleanup(srv.Close)
	return gw, srv
}

// connectAs opens a go-sdk client session over HTTP as user ("" for
// anonymous).
func connectAs(t *testing.T, url, user, version string, opts ...func(*mcp.ClientOptions)) *client {
	t.Helper()
	hc := &http.Client{Transport: http.DefaultTransport}
	if user != "" {
		hc.Transport = userHeader{user, hc.Transport}
	}
	c := &client{changed: make(chan struct{}, 16)}
	co := &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case c.changed <- struct{}{}:
			default:
			}
		},
	}
	for _, o := range opts {
		o(co)
	}
	cl := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, co)
	cs, err := cl.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	c.ClientSession = cs
	return c
}

// answers is everything a caller can learn of one server's tool,
// resource, template URI, prompt and completion: the text of each answer
// or error, with the names asked for replaced by X.
func answers(t *testing.T, c *client, server string) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	norm := func(s string) string {
		for _, n := range []string{server + "__explain", server + "__add", server + "__upper", server + "://readme", server + "://doc/k"} {
			s = strings.ReplaceAll(s, n, "X")
		}
		return strings.ReplaceAll(s, strings.ReplaceAll(server+"://readme", "/", `\/`), "X")
	}
	errText := func(err error) string {
		if err == nil {
			return "ok"
		}
		return norm(err.Error())
	}
	tool := server + "__add"
	if server == "text" || server == "nosuchtext" {
		tool = server + "__upper"
	}
	res, err := c.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
	out["tools/call"] = errText(err)
	if err == nil {
		out["tools/call"] = norm(resultText(res))
	}
	text, isErr := c.call(t, "call_tool", map[string]any{"name": tool, "arguments": map[string]any{}})
	out["call_tool"] = norm(text)
	if !isErr {
		out["call_tool"] = "ok: " + text
	}
	_, err = c.ReadResource(ctx, &mcp.ReadResourceParams{URI: server + "://readme"})
	out["resources/read"] = errText(err)
	_, err = c.ReadResource(ctx, &mcp.ReadResourceParams{URI: server + "://doc/k"})
	out["resources/read template"] = errText(err)
	_, err = c.GetPrompt(ctx, &mcp.GetPromptParams{Name: server + "__explain"})
	out["prompts/get"] = errText(err)
	_, err = c.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: server + "__explain"},
		Argument: mcp.CompleteParamsArgument{Name: "topic", Value: "x"}})
	out["completion/complete"] = errText(err)
	err = c.Subscribe(ctx, &mcp.SubscribeParams{URI: server + "://readme"})
	out["resources/subscribe"] = errText(err)
	return out
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, ct := range res.Content {
		if tc, ok := ct.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// lists is what a caller's lists hold: tools, resources, templates and
// prompts, sorted.
func lists(t *testing.T, c *client) map[string][]string {
	t.Helper()
	ctx := context.Background()
	out := map[string][]string{"tools": c.names(t)}
	rs, err := c.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs.Resources {
		out["resources"] = append(out["resources"], r.URI)
	}
	ts, err := c.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range ts.ResourceTemplates {
		if r.Name != "toolsift-namespaced" {
			out["templates"] = append(out["templates"], r.URITemplate)
		}
	}
	ps, err := c.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps.Prompts {
		out["prompts"] = append(out["prompts"], p.Name)
	}
	for _, v := range out {
		slices.Sort(v)
	}
	return out
}

// TestPolicyScopesEveryRoute: bob (team b, allowed text only) can neither
// see nor call math's tools, resources, templates, prompts or
// completions: on both wires each answers as it does for a server that
// does not exist, error texts included, and search_tools never names
// them; alice (team a, math but its divide) is unaffected but for the
// denied tool; an anonymous caller gets the anonymous rule.
func TestPolicyScopesEveryRoute(t *testing.T) {
	_, srv := policyGateway(t)
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			bob := connectAs(t, srv.URL, "bob:b", version)
			alice := connectAs(t, srv.URL, "alice:a", version)
			anon := connectAs(t, srv.URL, "", version)

			wantBob := map[string][]string{
				"tools":     {"call_tool", "search_tools", "text__count_words", "text__upper"},
				"resources": {"text://readme"},
				"templates": {"text://doc/{key}"},
				"prompts":   {"text__explain"},
			}
			if diff := cmp.Diff(wantBob, lists(t, bob)); diff != "" {
				t.Errorf("bob's lists (-want +got):\n%s", diff)
			}
			wantAlice := map[string][]string{
				"tools":     {"call_tool", "math__add", "search_tools"},
				"resources": {"math://readme"},
				"templates": {"math://doc/{key}"},
				"prompts":   {"math__explain"},
			}
			if diff := cmp.Diff(wantAlice, lists(t, alice)); diff != "" {
				t.Errorf("alice's lists (-want +got):\n%s", diff)
			}
			wantAnon := map[string][]string{"tools": {"call_tool", "search_tools", "text__upper"}}
			if diff := cmp.Diff(wantAnon, lists(t, anon)); diff != "" {
				t.Errorf("anonymous lists (-want +got):\n%s", diff)
			}

			// Math's everything, to bob, reads as a server that does not exist.
			if diff := cmp.Diff(answers(t, bob, "nosuch"), answers(t, bob, "math")); diff != "" {
				t.Errorf("bob's answers for math differ from those for a server that does not exist (-nosuch +math):\n%s", diff)
			}
			// And text's, to alice.
			if diff := cmp.Diff(answers(t, alice, "nosuchtext"), answers(t, alice, "text")); diff != "" {
				t.Errorf("alice's answers for text differ from those for a server that does not exist (-nosuch +text):\n%s", diff)
			}
			// Alice reaches math.
			got := answers(t, alice, "math")
			for route, want := range map[string]string{"tools/call": "math.add", "call_tool": "ok: math.add", "resources/read": "ok",
				"resources/read template": "ok", "prompts/get": "ok", "completion/complete": "ok", "resources/subscribe": "ok"} {
				if got[route] != want {
					t.Errorf("alice's %s of math: %q, want %q", route, got[route], want)
				}
			}
			// Deny beats allow: math__divide is as absent to alice as a
			// tool that never was.
			seen := map[string]string{}
			for _, name := range []string{"math__divide", "math__nosuch"} {
				_, err := alice.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
				text, _ := alice.call(t, "call_tool", map[string]any{"name": name})
				seen[name] = strings.ReplaceAll(errString(err)+" | "+text, name, "X")
			}
			if seen["math__divide"] != seen["math__nosuch"] {
				t.Errorf("alice calling math__divide (denied):\n %s\nand a tool that does not exist:\n %s", seen["math__divide"], seen["math__nosuch"])
			}

			// search_tools: a query that ranks math's tools first finds
			// none of them for bob, neither found nor omitted.
			for _, q := range []string{"add two numbers and return their sum", "math__add", "divide one number by another"} {
				ans := bob.search(t, q, 5)
				b, _ := json.Marshal(ans)
				if strings.Contains(string(b), "math") {
					t.Errorf("bob's search_tools(%q) names math's tools: %s", q, b)
				}
				if ans := alice.search(t, q, 5); len(ans.Tools) == 0 || ans.Tools[0].Name != "math__add" && q != "divide one number by another" {
					t.Errorf("alice's search_tools(%q) = %+v, want math__add first", q, ans.Tools)
				} else if b, _ := json.Marshal(ans); strings.Contains(string(b), "divide") || strings.Contains(string(b), "text__") {
					t.Errorf("alice's search_tools(%q) names a tool out of her scope: %s", q, b)
				}
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

// TestPolicyOptions: a pattern naming no server of the config is a
// warning naming where it is written; a policy made in code with a rule
// that matches nobody or a bad glob is refused.
func TestPolicyOptions(t *testing.T) {
	pol, err := config.ParsePolicy("p.json", []byte("{\"rules\": [\n  {\"teams\": [\"a\"], \"allow\": [\"math\", \"mth__add\", \"*__upper\"]}]}"))
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.Open(context.Background(), scopedServers(t), &gateway.Options{
		Toolset: toolsift.Options{NoSemantic: true, Store: store.NewMemory()}, Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	want := []string{`p.json:2:3: rule 1: pattern "mth__add" names no server of the config`}
	if diff := cmp.Diff(want, gw.Warnings()); diff != "" {
		t.Errorf("Warnings (-want +got):\n%s", diff)
	}
	for name, pol := range map[string]*config.Policy{
		"nobody":   {Rules: []config.PolicyRule{{Allow: []string{"math"}}}},
		"bad glob": {Rules: []config.PolicyRule{{Users: []string{"a["}, Allow: []string{"math"}}}},
		"empty":    {Anonymous: &config.PolicyRule{Allow: []string{""}}},
	} {
		t.Run(name, func(t *testing.T) {
			gw, err := gateway.Open(context.Background(), scopedServers(t), &gateway.Options{
				Toolset: toolsift.Options{NoSemantic: true, Store: store.NewMemory()}, Policy: pol})
			if !errors.Is(err, gateway.ErrOptions) {
				if gw != nil {
					gw.Close()
				}
				t.Fatalf("Open: %v, want ErrOptions", err)
			}
		})
	}
}

// TestPolicyStdio: ServeStdio serves its client as the Identity of its
// ctx: bob's stdio session lists and calls text's tools only, and math's
// add is as unknown to it as a tool that does not exist.
func TestPolicyStdio(t *testing.T) {
	pol, err := config.ParsePolicy("policy.json", []byte(testPolicy))
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.Open(context.Background(), scopedServers(t), &gateway.Options{
		Toolset: toolsift.Options{NoSemantic: true, Store: store.NewMemory(), Pin: []string{"*"}}, Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	ctx, cancel := context.WithCancel(authn.WithIdentity(context.Background(), authn.Identity{User: "bob", Teams: []string{"b"}}))
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- gw.ServeStdio(ctx, sr, sw) }()
	t.Cleanup(func() {
		cancel()
		cw.Close()
		sw.Close()
		<-done
	})
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(),
		&mcp.IOTransport{Reader: cr, Writer: cw}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	c := &client{ClientSession: cs}
	if diff := cmp.Diff([]string{"call_tool", "search_tools", "text__count_words", "text__upper"}, c.names(t)); diff != "" {
		t.Errorf("bob's stdio list (-want +got):\n%s", diff)
	}
	if text, isErr := c.call(t, "text__upper", map[string]any{}); isErr || text != "text.upper" {
		t.Errorf("text__upper: %q (isError %v)", text, isErr)
	}
	if diff := cmp.Diff(answers(t, c, "nosuch"), answers(t, c, "math")); diff != "" {
		t.Errorf("bob's answers for math differ from those for a server that does not exist (-nosuch +math):\n%s", diff)
	}
}

// TestSetPolicy: a new policy takes what left bob's scope off his
// session's list (tools/list_changed) and puts the pinned tools that
// entered it on; the found ones out of scope are forgotten; an invalid
// policy is refused and the one in force stays.
func TestSetPolicy(t *testing.T) {
	gw, srv := policyGateway(t)
	prompts := make(chan struct{}, 8)
	bob := connectAs(t, srv.URL, "bob:b", "2025-11-25", func(o *mcp.ClientOptions) {
		o.PromptListChangedHandler = func(context.Context, *mcp.PromptListChangedRequest) { prompts <- struct{}{} }
	})
	latest := connectAs(t, srv.URL, "bob:b", "2026-07-28")
	if got := bob.names(t); !slices.Contains(got, "text__upper") {
		t.Fatalf("bob's list before: %v", got)
	}
	pol, err := config.ParsePolicy("new.json", []byte(`{"rules": [{"teams": ["b"], "allow": ["math"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if w, err := gw.SetPolicy(pol); err != nil || len(w) > 0 {
		t.Fatalf("SetPolicy: warnings %q, %v", w, err)
	}
	bob.waitChanged(t)
	want := []string{"call_tool", "math__add", "math__divide", "search_tools"}
	if diff := cmp.Diff(want, bob.names(t)); diff != "" {
		t.Errorf("bob's session list after SetPolicy (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, latest.names(t)); diff != "" {
		t.Errorf("bob's 2026-07-28 list after SetPolicy (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(answers(t, bob, "nosuchtext"), answers(t, bob, "text")); diff != "" {
		t.Errorf("bob's answers for text after SetPolicy differ from those for a server that does not exist (-nosuch +text):\n%s", diff)
	}
	if text, isErr := bob.call(t, "math__add", map[string]any{}); isErr || text != "math.add" {
		t.Errorf("math__add after SetPolicy: %q (isError %v)", text, isErr)
	}
	// The session's prompts follow: a prompts/list_changed, then math's.
	select {
	case <-prompts:
	case <-time.After(testenv.WaitLimit()):
		t.Fatal("no prompts/list_changed after SetPolicy")
	}
	wantLists := map[string][]string{"tools": want, "resources": {"math://readme"}, "templates": {"math://doc/{key}"}, "prompts": {"math__explain"}}
	if diff := cmp.Diff(wantLists, lists(t, bob)); diff != "" {
		t.Errorf("bob's lists after SetPolicy (-want +got):\n%s", diff)
	}

	if _, err := gw.SetPolicy(&config.Policy{Rules: []config.PolicyRule{{Allow: []string{"text"}}}}); !errors.Is(err, gateway.ErrOptions) {
		t.Errorf("SetPolicy(a rule matching nobody) = %v, want ErrOptions", err)
	}
	if diff := cmp.Diff(want, bob.names(t)); diff != "" {
		t.Errorf("bob's list after a refused SetPolicy (-want +got):\n%s", diff)
	}
	if _, err := gw.SetPolicy(nil); err != nil {
		t.Fatal(err)
	}
	if got := bob.names(t); len(got) != 6 {
		t.Errorf("bob's list without a policy: %v, want every pinned tool", got)
	}
}

// TestPolicyRoom: pinned tools out of a caller's scope take no room on its
// list: with a cap of 3 and math's two tools pinned, bob (text only) still
// has room for the tool he finds.
func TestPolicyRoom(t *testing.T) {
	pol, err := config.ParsePolicy("policy.json", []byte(testPolicy))
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.Open(context.Background(), scopedServers(t), &gateway.Options{
		Toolset: toolsift.Options{NoSemantic: true, Store: store.NewMemory(), Pin: []string{"math__*"}},
		Policy:  pol,
		Search:  gateway.SearchOptions{MaxTools: 3},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	srv := httptest.NewServer(asMember(gw.Handler()))
	t.Cleanup(srv.Close)
	bob := connectAs(t, srv.URL, "bob:b", "2025-11-25")
	if ans := bob.search(t, "convert a text to upper case", 1); len(ans.Tools) != 1 || !ans.Listed {
		t.Fatalf("bob's search: %+v, want one tool, listed", ans)
	}
	bob.waitChanged(t)
	if diff := cmp.Diff([]string{"call_tool", "search_tools", "text__upper"}, bob.names(t)); diff != "" {
		t.Errorf("bob's list (-want +got):\n%s", diff)
	}
}

package toolsift_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/toolindex"
	"github.com/toolsift/toolsift/upstream"
)

// ExampleOpenConfig opens a Toolset over a config built in code, where
// plain Go functions are served as a server's tools, and takes one Think
// step and one call the way the agent does.
func ExampleOpenConfig() {
	ctx := context.Background()
	local, err := upstream.LocalServer(
		upstream.LocalTool{Name: "get_weather", Description: "Get the current weather for a city.",
			Handler: func(context.Context, json.RawMessage) (string, error) { return "sunny, 21°C", nil }},
		upstream.LocalTool{Name: "send_email", Description: "Send an email to a recipient.",
			Handler: func(context.Context, json.RawMessage) (string, error) { return "sent", nil }},
	)
	if err != nil {
		log.Fatal(err)
	}
	ts, err := toolsift.OpenConfig(ctx, &config.Config{Servers: map[string]config.Server{"demo": local}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ts.Close()

	found, err := ts.Search(ctx, "what is the weather like", 1)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("search:", found[0].Tool.Name)
	off, err := ts.Think(ctx, think.Request{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("offered:", off.Names(), "everything fits:", off.Everything)
	res, err := ts.Call(ctx, "demo__get_weather", json.RawMessage(`{"city":"Bern"}`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("call:", res.Content)
	// Output:
	// search: demo__get_weather
	// offered: [demo__get_weather demo__send_email] everything fits: true
	// call: sunny, 21°C
}

// ExampleOpenHub opens a Toolset over a Hub of one's own: here every server
// is started at once (StartEager) and nothing is kept past the process.
// The Toolset connects the Hub with its change sink and owns it: Close
// closes both.
func ExampleOpenHub() {
	ctx := context.Background()
	local, err := upstream.LocalServer(
		upstream.LocalTool{Name: "get_weather", Description: "Get the current weather for a city.",
			Handler: func(context.Context, json.RawMessage) (string, error) { return "sunny, 21°C", nil }},
	)
	if err != nil {
		log.Fatal(err)
	}
	cfg := &config.Config{Servers: map[string]config.Server{"demo": local}}
	hub, err := upstream.NewHub(cfg, &upstream.HubOptions{Start: upstream.StartEager, Store: store.NewMemory()})
	if err != nil {
		log.Fatal(err)
	}
	ts, err := toolsift.OpenHub(ctx, hub, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ts.Close() // and the Hub
	for _, st := range ts.Status() {
		fmt.Println(st.Name, st.State, st.Tools, "tool")
	}
	res, err := ts.Call(ctx, "demo__get_weather", json.RawMessage(`{"city":"Bern"}`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content)
	// Output:
	// demo ready 1 tool
	// sunny, 21°C
}

// ExampleNew builds a Toolset over a list of tools, with no servers behind
// them (as toolbench eval and the benchmarks do), and searches it.
func ExampleNew() {
	ctx := context.Background()
	mk := func(name, desc string) tool.Tool {
		return tool.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(`{"type":"object"}`)}.WithHash()
	}
	ts, err := toolsift.New(ctx, []tool.Tool{
		mk("get_weather", "Get the current weather for a city."),
		mk("send_email", "Send an email to a recipient."),
		mk("create_event", "Create a calendar event."),
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ts.Close()
	found, err := ts.Search(ctx, "email my boss", 2)
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range found {
		fmt.Printf("%s %.2f\n", m.Tool.Name, m.Score)
	}
	// Output:
	// send_email 1.00
	// create_event 0.10
}

// ExampleOpen opens the servers of a config file (here one whose only
// server cannot start) and reports each server's state.
func ExampleOpen() {
	ctx := context.Background()
	ts, err := toolsift.Open(ctx, "testdata/example-mcp.json", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ts.Close()
	for _, st := range ts.Status() {
		fmt.Println(st.Name, st.State)
	}
	fmt.Println(len(ts.Tools()), "tools")
	// Output:
	// broken failed
	// 0 tools
}

// ExampleToolset_Explain answers "why was my tool not offered?" for one
// step: here K (the ranked tools a step considers) is 1, so the second
// tool a two-part request needs is ranked but not considered.
func ExampleToolset_Explain() {
	ctx := context.Background()
	mk := func(name, desc string) tool.Tool {
		return tool.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(`{"type":"object"}`)}.WithHash()
	}
	// A Think step of one's own (Options.Thinker), over an index with the
	// default embedders: K 1 and no packing, so that the step considers
	// the best tool only and the second is below K (packed, it would be
	// offered).
	vector, semantic, err := toolsift.DefaultEmbedders()
	if err != nil {
		log.Fatal(err)
	}
	ix, err := toolindex.New(vector, &toolindex.Options{Semantic: semantic})
	if err != nil {
		log.Fatal(err)
	}
	th, err := think.New(ix, &think.Options{Retrieval: retrieval.Options{K: 1}, Search: think.SearchAlways, NoPack: true})
	if err != nil {
		log.Fatal(err)
	}
	ts, err := toolsift.New(ctx, []tool.Tool{
		mk("get_weather", "Get the current weather for a city."),
		mk("send_email", "Send an email to a recipient."),
		mk("create_event", "Create a calendar event."),
	}, &toolsift.Options{Thinker: th})
	if err != nil {
		log.Fatal(err)
	}
	defer ts.Close()
	req := think.Request{Query: retrieval.Query{Task: "Email Ann the forecast for Bern."}}
	ex, err := ts.Explain(ctx, req, "send_email", "get_weather", "send_mail")
	if err != nil {
		log.Fatal(err)
	}
	for _, te := range ex.Tools {
		fmt.Printf("%s: %s, rank %d", te.Name, te.Decision, te.Rank)
		for _, s := range te.Signals {
			if s.Rank > 0 { // 0: that signal did not rank it
				fmt.Printf(", %s #%d", s.Signal, s.Rank)
			}
		}
		if len(te.Close) > 0 {
			fmt.Printf(", closest %s", te.Close[0])
		}
		fmt.Println()
	}
	// Output:
	// send_email: offered, rank 1, lexical #1, vector #1, semantic #1
	// get_weather: below_k, rank 2, vector #3, semantic #2
	// send_mail: not_in_catalog, rank 0, closest send_email
}

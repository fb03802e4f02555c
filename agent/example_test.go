package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"strings"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/agent"
	"github.com/toolsift/toolsift/agent/openaimodel"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/agenttest"
	"github.com/toolsift/toolsift/provider"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/toolindex"
	"github.com/toolsift/toolsift/upstream"
)

// Example wires the whole stack: Go functions served as MCP tools, opened
// as a toolsift.Toolset (indexed, ranked and fitted per step), and a chat
// model (here a scripted
// stand-in; point BaseURL at any OpenAI-compatible endpoint instead).
func Example() {
	ctx := context.Background()

	localTool := func(name, desc string, answer func(args map[string]any) string) upstream.LocalTool {
		return upstream.LocalTool{
			Name: name, Description: desc,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
			Handler: func(_ context.Context, raw json.RawMessage) (string, error) {
				var args map[string]any
				if err := json.Unmarshal(raw, &args); err != nil {
					return "", err
				}
				return answer(args), nil
			},
		}
	}
	local, err := upstream.LocalServer(
		localTool("get_weather", "Get the current weather for a city.", func(a map[string]any) string { return fmt.Sprint(a["city"], ": sunny, 21°C") }),
		localTool("get_forecast", "Get the weather forecast for the next days for a city.", func(a map[string]any) string { return fmt.Sprint(a["city"], ": rain tomorrow") }),
		localTool("book_hotel", "Book a hotel room in a city.", func(a map[string]any) string { return "booked" }),
	)
	if err != nil {
		log.Fatal(err)
	}
	// A Think step of one's own (toolsift.Options.Thinker), over an index
	// with the library's embedders: a budget too small for all three
	// tools, so each step is chosen: the best K (1) and, packed into what
	// the budget has left, the next ranked tool; the tool the model called
	// stays, sticky, in its place. No search_tools.
	vector, semantic, err := toolsift.DefaultEmbedders()
	if err != nil {
		log.Fatal(err)
	}
	ix, err := toolindex.New(vector, &toolindex.Options{Semantic: semantic})
	if err != nil {
		log.Fatal(err)
	}
	th, err := think.New(ix, &think.Options{Budget: 120, Retrieval: retrieval.Options{K: 1}, Search: think.SearchNever})
	if err != nil {
		log.Fatal(err)
	}
	ts, err := toolsift.OpenConfig(ctx, &config.Config{Servers: map[string]config.Server{"city": local}},
		&toolsift.Options{Thinker: th})
	if err != nil {
		log.Fatal(err)
	}
	defer ts.Close()

	srv := agenttest.NewServer(
		agenttest.Reply{ToolCalls: []tool.ToolCall{{Name: "city__get_weather", Arguments: `{"city":"Bern"}`}}},
		agenttest.Reply{Content: "It is sunny in Bern."},
	)
	defer srv.Close()
	model, err := openaimodel.NewChat("gpt-4o-mini", &openaimodel.ChatOptions{Options: provider.Options{BaseURL: srv.URL, APIKey: "sk-test"}, Stream: true})
	if err != nil {
		log.Fatal(err)
	}

	a, err := agent.New(model, ts, nil)
	if err != nil {
		log.Fatal(err)
	}
	res, err := a.Run(ctx, "What is the weather in Bern?")
	if err != nil {
		log.Fatal(err)
	}
	for _, st := range res.Steps {
		var names []string
		for _, o := range st.Offered {
			names = append(names, o.Name+" ("+o.Reason+")")
		}
		fmt.Printf("step %d offers %s\n", st.N, strings.Join(names, ", "))
		for _, c := range st.Calls {
			fmt.Printf("  %s %s -> %s\n", c.Name, c.Arguments, c.Observation)
		}
	}
	fmt.Println(res.Answer)
	// Output:
	// step 1 offers city__get_forecast (retrieved), city__get_weather (retrieved)
	//   city__get_weather {"city":"Bern"} -> Bern: sunny, 21°C
	// step 2 offers city__get_forecast (retrieved), city__get_weather (sticky)
	// It is sunny in Bern.
}

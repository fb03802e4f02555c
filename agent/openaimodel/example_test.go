package openaimodel_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/toolsift/toolsift/agent"
	"github.com/toolsift/toolsift/agent/openaimodel"
	"github.com/toolsift/toolsift/internal/agenttest"
	"github.com/toolsift/toolsift/provider"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
)

// ExampleNewChat asks an OpenAI-compatible endpoint for one completion.
func ExampleNewChat() {
	srv := agenttest.NewServer(agenttest.Reply{ToolCalls: []tool.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Bern"}`}}})
	defer srv.Close()

	// Empty BaseURL and APIKey mean OPENAI_BASE_URL and OPENAI_API_KEY.
	model, err := openaimodel.NewChat("gpt-4o-mini", &openaimodel.ChatOptions{Options: provider.Options{BaseURL: srv.URL, APIKey: "sk-test"}, Stream: true})
	if err != nil {
		log.Fatal(err)
	}
	resp, err := model.Complete(context.Background(), agent.Request{
		Messages: []tool.Message{{Role: tool.RoleUser, Content: "Weather in Bern?"}},
		Tools:    []agent.ToolDef{{Name: "get_weather", Description: "Current weather for a city."}},
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range resp.Message.ToolCalls {
		fmt.Println(c.ID, c.Name, c.Arguments)
	}
	fmt.Println(resp.FinishReason)
	// Output:
	// call_1 get_weather {"city":"Bern"}
	// tool_calls
}

// ExampleNewResponses asks a Responses API endpoint for one reply, with a
// deferred tool and the search tool (as the Agent sends them when the
// catalog does not fit the budget), streaming: the model's tool search
// comes back as a ToolCall with Search set.
func ExampleNewResponses() {
	srv := agenttest.NewResponsesServer(agenttest.Reply{
		Content:   "Let me find a tool.",
		ToolCalls: []tool.ToolCall{{ID: "ts_1", Search: true, Arguments: `{"query":"weather forecast"}`}},
	})
	defer srv.Close()

	model, err := openaimodel.NewResponses("gpt-5.4-mini", &openaimodel.ResponsesOptions{Options: provider.Options{BaseURL: srv.URL, APIKey: "sk-test"}, Stream: true})
	if err != nil {
		log.Fatal(err)
	}
	search := think.SearchTool()
	var streamed strings.Builder
	resp, err := model.Complete(context.Background(), agent.Request{
		Messages: []tool.Message{{Role: tool.RoleUser, Content: "Will it rain in Bern tomorrow?"}},
		Tools:    []agent.ToolDef{{Name: search.Name, Description: search.Description, Parameters: search.InputSchema}},
		Deferred: []agent.ToolDef{{Name: "get_forecast", Description: "Weather forecast for a city."}},
		OnDelta:  func(d agent.Delta) { streamed.WriteString(d.Text) },
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(streamed.String())
	for _, c := range resp.Message.ToolCalls {
		fmt.Println(c.ID, c.Name, c.Search, c.Arguments)
	}
	req := srv.Requests()[0]
	fmt.Println("loaded:", req.ToolNames(), "deferred:", req.DeferredNames())
	// Output:
	// Let me find a tool.
	// ts_1 search_tools true {"query":"weather forecast"}
	// loaded: [tool_search] deferred: [get_forecast]
}

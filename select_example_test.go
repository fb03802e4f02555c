package toolsift_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/budget"
	"github.com/toolsift/toolsift/tool"
)

// selector is a Toolset over a few tools whose budget holds about two of
// them, as an application with its own loop would open (toolsift.Open over
// its mcp.json works the same).
func selector() *toolsift.Toolset {
	mk := func(name, desc, schema string) tool.Tool {
		return tool.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(schema)}.WithHash()
	}
	ts, err := toolsift.New(context.Background(), []tool.Tool{
		mk("get_weather", "Get the current weather for a city.", `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
		mk("send_email", "Send an email to a recipient.", `{"type":"object","properties":{"to":{"type":"string"},"body":{"type":"string"}},"required":["to","body"]}`),
		mk("create_event", "Create a calendar event.", `{"type":"object","properties":{"title":{"type":"string"},"start":{"type":"string"}}}`),
		mk("read_file", "Read a file from disk.", `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
		mk("translate_text", "Translate a text into another language.", `{"type":"object","properties":{"text":{"type":"string"},"to":{"type":"string"}}}`),
	}, &toolsift.Options{Budget: 150, K: 1})
	if err != nil {
		log.Fatal(err)
	}
	return ts
}

// weatherChat is an application's conversation so far.
var weatherChat = []tool.Message{
	{Role: "system", Content: "You are a helpful assistant."},
	{Role: "user", Content: "What is the weather in Bern?"},
}

// ExampleToolset_Select chooses the tools of an application's next model
// call from its conversation, with the reason for each, and sends them in
// the Chat Completions shape. When the model calls search_tools, answer it
// with Toolset.SearchTools; the next Select offers what it found.
func ExampleToolset_Select() {
	ts := selector()
	defer ts.Close()
	sel, err := ts.Select(context.Background(), weatherChat)
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range sel.Tools {
		fmt.Println(t.Name, t.Reason)
	}
	fmt.Printf("%s\n", sel.JSON(budget.FormatChat))

	// The model asked search_tools for a way to send email: the next call
	// offers send_email, found, and, packed into the budget's room
	// (think.Options.Pack), the next tool the conversation ranks.
	next := append(weatherChat,
		tool.Message{Role: "assistant", ToolCalls: []tool.ToolCall{{ID: "c1", Name: "search_tools", Arguments: `{"query":"send an email","k":1}`}}},
		tool.Message{Role: "tool", ToolCallID: "c1", Content: "(the text of Toolset.SearchTools)"},
	)
	if sel, err = ts.Select(context.Background(), next); err != nil {
		log.Fatal(err)
	}
	for _, t := range sel.Tools {
		fmt.Println(t.Name, t.Reason)
	}
	// Output:
	// get_weather retrieved
	// search_tools meta
	// [{"type":"function","function":{"name":"get_weather","description":"Get the current weather for a city.","parameters":{"properties":{"city":{"type":"string"}},"required":["city"],"type":"object"}}},{"type":"function","function":{"name":"search_tools","description":"Search the catalog of available tools by what you need to do. Use it when none of the tools you have fits the next step. Returns the names and one-line descriptions of the best matching tools; they become callable in your next step.","parameters":{"additionalProperties":false,"properties":{"k":{"maximum":20,"minimum":1,"type":"integer"},"query":{"type":"string"}},"required":["query"],"type":"object"}}}]
	// send_email found
	// translate_text retrieved
	// search_tools meta
}

// ExampleSelection_JSON_responses sends the selection as the tools of an
// OpenAI Responses API request.
func ExampleSelection_JSON_responses() {
	ts := selector()
	defer ts.Close()
	sel, err := ts.Select(context.Background(), weatherChat)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s\n", sel.JSON(budget.FormatResponses))
	// Output:
	// [{"type":"function","name":"get_weather","description":"Get the current weather for a city.","parameters":{"properties":{"city":{"type":"string"}},"required":["city"],"type":"object"},"strict":false},{"type":"function","name":"search_tools","description":"Search the catalog of available tools by what you need to do. Use it when none of the tools you have fits the next step. Returns the names and one-line descriptions of the best matching tools; they become callable in your next step.","parameters":{"additionalProperties":false,"properties":{"k":{"maximum":20,"minimum":1,"type":"integer"},"query":{"type":"string"}},"required":["query"],"type":"object"},"strict":false}]
}

// ExampleSelection_JSON_anthropic sends the selection as the tools of an
// Anthropic Messages API request.
func ExampleSelection_JSON_anthropic() {
	ts := selector()
	defer ts.Close()
	sel, err := ts.Select(context.Background(), weatherChat)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s\n", sel.JSON(budget.FormatAnthropic))
	// Output:
	// [{"name":"get_weather","description":"Get the current weather for a city.","input_schema":{"properties":{"city":{"type":"string"}},"required":["city"],"type":"object"}},{"name":"search_tools","description":"Search the catalog of available tools by what you need to do. Use it when none of the tools you have fits the next step. Returns the names and one-line descriptions of the best matching tools; they become callable in your next step.","input_schema":{"additionalProperties":false,"properties":{"k":{"maximum":20,"minimum":1,"type":"integer"},"query":{"type":"string"}},"required":["query"],"type":"object"}}]
}

// ExampleSelection_JSON_mcp lists the selection as the tools of an MCP
// tools/list result, for a proxy or gateway that serves a few tools of many.
func ExampleSelection_JSON_mcp() {
	ts := selector()
	defer ts.Close()
	sel, err := ts.Select(context.Background(), weatherChat)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf(`{"tools":%s}`+"\n", sel.JSON(budget.FormatMCP))
	// Output:
	// {"tools":[{"name":"get_weather","description":"Get the current weather for a city.","inputSchema":{"properties":{"city":{"type":"string"}},"required":["city"],"type":"object"}},{"name":"search_tools","description":"Search the catalog of available tools by what you need to do. Use it when none of the tools you have fits the next step. Returns the names and one-line descriptions of the best matching tools; they become callable in your next step.","inputSchema":{"additionalProperties":false,"properties":{"k":{"maximum":20,"minimum":1,"type":"integer"},"query":{"type":"string"}},"required":["query"],"type":"object"}}]}
}

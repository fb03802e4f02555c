package upstream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"strings"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/upstream"
)

// Go functions served as tools mix with MCP servers in one Hub: the same
// qualified names, change events and calls.
func ExampleLocalServer() {
	calc, err := upstream.LocalServer(
		upstream.LocalTool{
			Name:        "add",
			Description: "Add two numbers.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`),
			Handler: func(_ context.Context, args json.RawMessage) (string, error) {
				var in struct{ A, B float64 }
				if err := json.Unmarshal(args, &in); err != nil {
					return "", err
				}
				return fmt.Sprint(in.A + in.B), nil
			},
		},
		upstream.LocalTool{
			Name:        "divide",
			Description: "Divide a by b.",
			Handler: func(_ context.Context, args json.RawMessage) (string, error) {
				var in struct{ A, B float64 }
				if err := json.Unmarshal(args, &in); err != nil {
					return "", err
				}
				if in.B == 0 {
					return "", fmt.Errorf("division by zero")
				}
				return fmt.Sprint(in.A / in.B), nil
			},
		},
	)
	if err != nil {
		log.Fatal(err)
	}
	cfg := &config.Config{Servers: map[string]config.Server{"calc": calc}}
	hub, err := upstream.NewHub(cfg, nil)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	var changes []tool.Change // for an index: hub.Connect(ctx, ix.Apply)
	if err := hub.Connect(ctx, func(_ context.Context, c tool.Change) error {
		changes = append(changes, c)
		return nil
	}); err != nil {
		log.Fatal(err)
	}
	var names []string
	for _, t := range hub.Tools() {
		names = append(names, t.Name)
	}
	fmt.Println(strings.Join(names, " "))

	res, err := hub.Call(ctx, "calc__add", json.RawMessage(`{"a": 2, "b": 40}`))
	fmt.Println(res.Content, res.IsError, err)
	res, err = hub.Call(ctx, "calc__divide", json.RawMessage(`{"a": 1, "b": 0}`))
	fmt.Println(res.Content, res.IsError, err)
	_, err = hub.Call(ctx, "calc__sqrt", nil)
	fmt.Println(err)

	// Connect returned after the first change was applied.
	if err := hub.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d change(s); %d tools added by %s\n", len(changes), len(changes[0].Added), changes[0].Server)
	// Output:
	// calc__add calc__divide
	// 42 false <nil>
	// division by zero true <nil>
	// upstream: unknown tool: "calc__sqrt"
	// 1 change(s); 2 tools added by calc
}

func ExampleQualifiedName() {
	fmt.Println(upstream.QualifiedName("github", "create_issue"))
	fmt.Println(upstream.QualifiedName("docs.internal", "search"))
	fmt.Println(len(upstream.QualifiedName("github", strings.Repeat("very_long_tool_name_", 5))))
	// Output:
	// github__create_issue
	// docs_internal-8a0277__search
	// 64
}

package budget_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/toolsift/toolsift/budget"
	"github.com/toolsift/toolsift/tool"
)

func ExampleNewTokenizer() {
	tok, err := budget.NewTokenizer("gpt-4.1-mini", "")
	if err != nil {
		panic(err)
	}
	fmt.Println(tok.Encoding(), tok.Count("hello world"))

	_, err = budget.NewTokenizer("gpt-4o", "o300k_base")
	fmt.Println(errors.Is(err, budget.ErrUnknownEncoding))
	// Output:
	// o200k_base 2
	// true
}

func ExampleTokenizer_CountTool() {
	tok, _ := budget.NewTokenizer("gpt-4o", "")
	tool := tool.Tool{
		Name:        "read_file",
		Description: "Read a file from disk. Returns its content as text.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"Absolute path of the file"}},"required":["path"]}`),
	}
	for tier := budget.TierFull; tier < budget.NumTiers; tier++ {
		r, _ := tok.CountTool(tool, tier)
		fmt.Printf("%-17s %2d tokens  %s\n", tier, r.Tokens, r.JSON(tool.Name, budget.FormatChat))
	}
	// Output:
	// full              55 tokens  {"type":"function","function":{"name":"read_file","description":"Read a file from disk. Returns its content as text.","parameters":{"properties":{"path":{"description":"Absolute path of the file","type":"string"}},"required":["path"],"type":"object"}}}
	// no-param-docs     47 tokens  {"type":"function","function":{"name":"read_file","description":"Read a file from disk. Returns its content as text.","parameters":{"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}}}
	// short-description 41 tokens  {"type":"function","function":{"name":"read_file","description":"Read a file from disk.","parameters":{"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}}}
	// minimal           41 tokens  {"type":"function","function":{"name":"read_file","description":"Read a file from disk.","parameters":{"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}}}
	// name              39 tokens  {"type":"function","function":{"name":"read_file","description":"Read a file from disk. (parameters: ask search_tools)","parameters":{"properties":{},"type":"object"}}}
}

func ExampleSelect() {
	tok, _ := budget.NewTokenizer("gpt-4o", "")
	tool := func(name, desc string) tool.Tool {
		return tool.Tool{
			Name:        name,
			Description: desc,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"What to look for, in plain words"}},"required":["query"]}`),
		}.WithHash()
	}
	cands := []budget.Candidate{
		{Tool: tool("search_issues", "Search issues in a repository. Supports filters by label, author and state."), Score: 0.92},
		{Tool: tool("search_code", "Search code across repositories. Matches identifiers and text."), Score: 0.81},
		{Tool: tool("search_commits", "Search commits by message. Returns hashes and authors."), Score: 0.40},
		{Tool: tool("final_answer", "Give the final answer to the user."), Score: 0, Pinned: true},
	}
	sel, err := budget.Select(tok, cands, budget.Budget{Tokens: 150})
	if err != nil {
		panic(err)
	}
	for _, s := range sel.Tools {
		fmt.Printf("%-14s %-17s %d\n", s.Tool.Name, s.Tier, s.Tokens)
	}
	fmt.Println("total", sel.Tokens, "dropped", sel.Dropped)

	_, err = budget.Select(tok, cands, budget.Budget{Tokens: 20})
	fmt.Println(err)
	// Output:
	// final_answer   no-param-docs     43
	// search_code    no-param-docs     45
	// search_issues  full              62
	// total 150 dropped [search_commits]
	// budget: budget too small: 20 tokens cannot hold the 1 pinned and minimum tools: they need 43 at their cheapest tier
}

func ExampleTruncate() {
	tok, _ := budget.NewTokenizer("gpt-4o", "")
	var out strings.Builder
	for i := range 100 {
		fmt.Fprintf(&out, "row %d: ok\n", i)
	}
	fmt.Println(budget.Truncate(tok, out.String(), 30))
	// Output:
	// row 0: ok
	// row 1: ok
	// row 2: ok
	// … [truncated 583 of 600 tokens]
}

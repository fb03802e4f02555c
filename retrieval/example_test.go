package retrieval_test

import (
	"context"
	"fmt"
	"log"

	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/toolindex"
)

func Example() {
	ctx := context.Background()
	emb, err := toolindex.NewLocalEmbedder(nil)
	if err != nil {
		log.Fatal(err)
	}
	ix, err := toolindex.New(emb, nil)
	if err != nil {
		log.Fatal(err)
	}
	_, err = ix.Upsert(ctx,
		tool.Tool{Name: "weather__get_forecast", Server: "weather", Description: "Get the weather forecast for a city."},
		tool.Tool{Name: "github__create_issue", Server: "github", Description: "Create an issue in a GitHub repository."},
		tool.Tool{Name: "mail__send_email", Server: "mail", Description: "Send an email to a recipient."},
		tool.Tool{Name: "fs__read_file", Server: "fs", Description: "Read a file from disk."},
	)
	if err != nil {
		log.Fatal(err)
	}

	r, err := retrieval.New(ix, &retrieval.Options{K: 2, Pinned: []string{"fs__read_file"}})
	if err != nil {
		log.Fatal(err)
	}
	matches, err := r.Retrieve(ctx, retrieval.Query{
		Task:    "Check tomorrow's weather in Oslo and email it to Kari.",
		Thought: "I know the forecast. Now I send the email to Kari.",
		Used:    []string{"weather__get_forecast"},
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range matches {
		fmt.Printf("%-22s pinned=%v sticky=%v\n", m.Tool.Name, m.Pinned, m.Sticky)
	}
	// Output:
	// fs__read_file          pinned=true sticky=false
	// weather__get_forecast  pinned=false sticky=true
	// mail__send_email       pinned=false sticky=false
	// github__create_issue   pinned=false sticky=false
}

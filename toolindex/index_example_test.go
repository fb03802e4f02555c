package toolindex_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/toolindex"
)

var exampleTools = []tool.Tool{
	{Name: "weather__get_forecast", Server: "weather", Description: "Get the weather forecast for a city.",
		InputSchema: []byte(`{"type":"object","properties":{"city":{"type":"string","description":"City name"}}}`)},
	{Name: "github__create_issue", Server: "github", Description: "Create a new issue in a repository.",
		InputSchema: []byte(`{"type":"object","properties":{"repo":{"type":"string"},"title":{"type":"string"}}}`)},
	{Name: "fs__read_file", Server: "fs", Description: "Read the contents of a file.",
		InputSchema: []byte(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
}

func ExampleNew() {
	ctx := context.Background()
	emb, err := toolindex.NewLocalEmbedder(nil)
	if err != nil {
		log.Fatal(err)
	}
	ix, err := toolindex.New(emb, nil)
	if err != nil {
		log.Fatal(err)
	}
	st, err := ix.Upsert(ctx, exampleTools...)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("embedded %d tools in %d batch\n", st.Embedded, st.Batches)

	// By meaning: embed the query with the same embedder.
	q, err := emb.Embed(ctx, []string{"will it rain in Paris tomorrow? weather"})
	if err != nil {
		log.Fatal(err)
	}
	hits, err := ix.SearchVector(ctx, q[0], 1, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("vector: ", hits[0].Tool.Name)

	// By words (BM25F over name, description and parameters).
	for _, h := range ix.SearchLexical("open an issue in my repo", 2, nil) {
		fmt.Println("lexical:", h.Tool.Name)
	}

	// Upserting the same tools again embeds nothing.
	st, _ = ix.Upsert(ctx, exampleTools...)
	fmt.Printf("unchanged %d, embedded %d\n", st.Unchanged, st.Embedded)
	// Output:
	// embedded 3 tools in 1 batch
	// vector:  weather__get_forecast
	// lexical: github__create_issue
	// unchanged 3, embedded 0
}

func ExampleLoad() {
	ctx := context.Background()
	emb, _ := toolindex.NewLocalEmbedder(nil)
	ix, _ := toolindex.New(emb, nil)
	if _, err := ix.Upsert(ctx, exampleTools...); err != nil {
		log.Fatal(err)
	}
	dir, _ := os.MkdirTemp("", "toolindex")
	defer os.RemoveAll(dir)
	if err := ix.Save(dir); err != nil {
		log.Fatal(err)
	}

	// A restart: the vectors come from disk, nothing is embedded.
	loaded, err := toolindex.Load(ctx, dir, emb, nil)
	if err != nil {
		log.Fatal(err)
	}
	for t := range loaded.All() {
		fmt.Println(t.Name)
	}
	// Output:
	// fs__read_file
	// github__create_issue
	// weather__get_forecast
}

package provider_test

import (
	"fmt"
	"log"

	"github.com/toolsift/toolsift/provider"
	"github.com/toolsift/toolsift/toolindex"
)

func ExampleNewEmbedder() {
	// Ollama's OpenAI-compatible endpoint; for OpenAI leave BaseURL empty
	// and set OPENAI_API_KEY.
	emb, err := provider.NewEmbedder("nomic-embed-text", &provider.EmbedderOptions{
		Options:   provider.Options{BaseURL: "http://localhost:11434/v1"},
		BatchSize: 128,
	})
	if err != nil {
		log.Fatal(err)
	}
	// The embedder makes the vectors of an index; nothing is sent before
	// the first Upsert.
	ix, err := toolindex.New(emb, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(emb.ID(), ix.Len())
	// Output: openai:nomic-embed-text@localhost:11434 0
}

package think_test

import (
	"context"
	"testing"

	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/think"
)

// BenchmarkThinkPolicy is one Think step at the second step of a run,
// under each policy: what keeping the previous list in place adds.
func BenchmarkThinkPolicy(b *testing.B) {
	ix := testenv.Index(b, nil, nil, catalog...)
	ctx := context.Background()
	for _, p := range []think.Policy{think.PolicyFresh, think.PolicyStable} {
		b.Run(p.String(), func(b *testing.B) {
			o := think.Options{Budget: stableBudget, Retrieval: retrieval.Options{K: 3}, Policy: p, Tokenizer: tokenizer(b)}
			th, err := think.New(ix, &o)
			if err != nil {
				b.Fatal(err)
			}
			first, err := th.Think(ctx, think.Request{Query: retrieval.Query{Task: "What is the weather in Bern?"}})
			if err != nil {
				b.Fatal(err)
			}
			req := think.Request{Query: retrieval.Query{Task: "Then email it to Bob.", Used: []string{"get_weather"}},
				Previous: first.Tools, Steps: 1, MessageTokens: 500, Found: []string{"write_file"}}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := th.Think(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

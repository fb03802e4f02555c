package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/toolsift/toolsift/agent"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/toolindex"
)

// answerModel answers at once, without tool calls: the benchmark measures
// the agent's own work per step.
type answerModel struct{}

func (answerModel) Complete(context.Context, agent.Request) (agent.Response, error) {
	return agent.Response{Message: tool.Message{Role: tool.RoleAssistant, Content: "done"}}, nil
}

// indexTools is agent.Tools over an index and its Think step, without
// servers: the model calls no tools here.
type indexTools struct {
	ix *toolindex.Index
	th *think.Thinker
}

func (s indexTools) Think(ctx context.Context, req think.Request) (think.Offer, error) {
	return s.th.Think(ctx, req)
}

func (s indexTools) SearchTools(ctx context.Context, args json.RawMessage) (string, []retrieval.Match, error) {
	return s.th.SearchTools(ctx, args)
}

func (s indexTools) Get(name string) (tool.Tool, bool) { return s.ix.Get(name) }

func (s indexTools) Call(context.Context, string, json.RawMessage) (tool.Result, error) {
	return tool.Result{}, tool.ErrUnknown
}

// synthTools makes n distinct tools from a seeded vocabulary: a verb and
// an object per tool, two typed parameters, a sentence of description.
func synthTools(n int) []tool.Tool {
	verbs := strings.Fields("get list create update delete search send fetch convert book cancel schedule translate summarize export import archive restore share sync")
	objects := strings.Fields("weather forecast email invoice order ticket event note file folder contact payment issue repository branch song playlist flight hotel route")
	domains := strings.Fields("travel finance office media devops crm health retail")
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]tool.Tool, n)
	for i := range out {
		v, o, d := verbs[r.IntN(len(verbs))], objects[r.IntN(len(objects))], domains[r.IntN(len(domains))]
		out[i] = tool.Tool{
			Name:        fmt.Sprintf("%s%d__%s_%s", d, i/50, v, o),
			Server:      fmt.Sprintf("%s%d", d, i/50),
			Description: fmt.Sprintf("%s a %s in the %s service (variant %d).", strings.ToUpper(v[:1])+v[1:], o, d, i),
			InputSchema: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"%s_id":{"type":"string","description":"The %s to act on."},"limit":{"type":"integer"}},"required":["%s_id"]}`, o, o, o)),
		}.WithHash()
	}
	return out
}

// BenchmarkStep measures one agent step's own work (the Think step:
// retrieve, catalog cost, select; plus the run's bookkeeping) over catalogs
// of 1k, 10k and 100k tools. The catalog's cost is kept per index
// generation, so a step does no O(catalog) rendering: the step grows with
// the retriever's scan only.
func BenchmarkStep(b *testing.B) {
	tok := tokenizer(b)
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			tools := synthTools(n)
			ix, _ := index(b, tools, 0)
			th, err := think.New(ix, &think.Options{Tokenizer: tok})
			if err != nil {
				b.Fatal(err)
			}
			a, err := agent.New(answerModel{}, indexTools{ix, th}, &agent.Options{Tokenizer: tok})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			// The first run renders and counts every tool once (cached by
			// content hash); steps after it are what a long run pays.
			res, err := a.Run(ctx, "warm up")
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				res, err = a.Run(ctx, "What is the weather forecast for Paris for the next three days?")
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(res.ToolTokens), "tool-tokens/step")
			b.ReportMetric(float64(res.AllToolsTokens), "all-tools-tokens/step")
		})
	}
}

// deferAnswerModel is answerModel that takes deferred tools.
type deferAnswerModel struct{ answerModel }

func (deferAnswerModel) DefersTools() bool { return true }

// catalogTools is indexTools that can list the catalog (an agent.Catalog).
type catalogTools struct{ indexTools }

func (c catalogTools) Tools() []tool.Tool {
	var out []tool.Tool
	for t := range c.ix.All() {
		out = append(out, t)
	}
	return out
}

// BenchmarkDeferredRun measures a one-step run whose catalog goes as
// deferred tools (a DeferringModel and a catalog over the budget but under
// MaxDeferredTokens): the Think step plus rendering the rest of the
// catalog at full tier, which a run does once, at its first step.
func BenchmarkDeferredRun(b *testing.B) {
	tok := tokenizer(b)
	for _, n := range []int{100, 500} {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			ix, _ := index(b, synthTools(n), 0)
			th, err := think.New(ix, &think.Options{Tokenizer: tok})
			if err != nil {
				b.Fatal(err)
			}
			a, err := agent.New(deferAnswerModel{}, catalogTools{indexTools{ix, th}}, &agent.Options{Tokenizer: tok})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			res, err := a.Run(ctx, "warm up")
			if err != nil {
				b.Fatal(err)
			}
			if res.Steps[0].DeferredTools == 0 {
				b.Fatalf("nothing deferred: %d tools, %d tokens", res.Steps[0].AllTools, res.Steps[0].AllToolsTokens)
			}
			b.ReportAllocs()
			for b.Loop() {
				res, err = a.Run(ctx, "What is the weather forecast for Paris for the next three days?")
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(res.Steps[0].DeferredTools), "deferred-tools")
			b.ReportMetric(float64(res.Steps[0].DeferredTokens), "deferred-tokens")
		})
	}
}

package agent_test

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolsift/toolsift/agent"
	"github.com/toolsift/toolsift/internal/dataset"
	"github.com/toolsift/toolsift/tool"
)

// answerModel answers at once, without tool calls: the benchmark measures
// the agent's own work per step.
type answerModel struct{}

func (answerModel) Complete(context.Context, agent.Request) (agent.Response, error) {
	return agent.Response{Message: agent.Message{Role: agent.RoleAssistant, Content: "done"}}, nil
}

// noCaller is never called: the model calls no tools.
type noCaller struct{}

func (noCaller) Call(context.Context, string, json.RawMessage) (tool.Result, error) {
	return tool.Result{}, nil
}

func bfclTools(b *testing.B) []tool.Tool {
	b.Helper()
	path := filepath.Join("..", "cmd", "toolbench", "data", "bfcl", "tools.jsonl.gz")
	f, err := os.Open(path)
	if err != nil {
		b.Skipf("BFCL tools not found: %v", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		b.Fatal(err)
	}
	tools, err := dataset.ReadTools(zr, path)
	if err != nil {
		b.Fatal(err)
	}
	for i := range tools {
		tools[i] = tools[i].WithHash()
	}
	return tools
}

// BenchmarkStep measures one Think step (retrieve, catalog cost, select)
// plus the bookkeeping of a run, over catalogs of growing size, and reports
// the tool tokens sent against those of the whole catalog.
func BenchmarkStep(b *testing.B) {
	all := bfclTools(b)
	tok := tokenizer(b)
	for _, n := range []int{100, 1000, len(all)} {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			ix, ret := index(b, all[:n], 10)
			a, err := agent.New(answerModel{}, agent.Tools{Catalog: ix, Retriever: ret, Caller: noCaller{}},
				&agent.Options{Tokenizer: tok, ToolBudget: 2000})
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

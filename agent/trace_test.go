package agent_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/toolsift/toolsift/agent"
	"github.com/toolsift/toolsift/internal/agenttest"
	"github.com/toolsift/toolsift/think"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestTraceRun: with Options.Tracer, a run over the real openai-go
// client and a real MCP server is an agent.run span under the caller's,
// with an agent.think span per step (the step, the tools offered and
// their tokens, the model's outcome) and a "call TOOL" span per tool
// call (kind client, server and outcome; an unknown tool's status
// Error), all children of the run's; no attribute holds the task, the
// arguments or a result.
func TestTraceRun(t *testing.T) {
	const task = "What is the weather in Bern?"
	srv := agenttest.NewServer(
		agenttest.Reply{ToolCalls: calls("t__get_weather", `{"city":"Bern"}`, "t__no_such_tool", `{}`)},
		agenttest.Reply{Content: "It is sunny in Bern."},
	)
	defer srv.Close()
	mem := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(mem))
	defer tp.Shutdown(context.Background())
	f := newFixture(t, with(map[string]func(context.Context, json.RawMessage) (string, error){"get_weather": weather}), 0)
	a := newAgent(t, srv, f, true, &agent.Options{Tracer: tp})

	ctx, caller := tp.Tracer("test").Start(context.Background(), "caller")
	res, err := a.Run(ctx, task)
	caller.End()
	if err != nil || res.Answer != "It is sunny in Bern." {
		t.Fatalf("Run = %q, %v", res.Answer, err)
	}

	spans := mem.GetSpans()
	by := map[string][]tracetest.SpanStub{}
	for _, s := range spans {
		by[s.Name] = append(by[s.Name], s)
		for _, kv := range s.Attributes {
			v := kv.Value.String()
			if strings.Contains(v, "Bern") || strings.Contains(v, "sunny") || strings.Contains(v, "weather in") {
				t.Errorf("span %s: attribute %s = %q: text of the task, the arguments or a result", s.Name, kv.Key, v)
			}
		}
	}
	if len(by["caller"]) != 1 || len(by["agent.run"]) != 1 {
		t.Fatalf("spans %v, want one caller and one agent.run", spanNames(spans))
	}
	callerSpan, run := by["caller"][0], by["agent.run"][0]
	if run.Parent.SpanID() != callerSpan.SpanContext.SpanID() || run.SpanContext.TraceID() != callerSpan.SpanContext.TraceID() {
		t.Errorf("agent.run: parent %s, want the caller's %s", run.Parent.SpanID(), callerSpan.SpanContext.SpanID())
	}
	if a := attrMap(run); a["toolsift.agent.steps"] != "2" || a["toolsift.outcome"] != "answer" || a["gen_ai.usage.input_tokens"] == "0" {
		t.Errorf("agent.run attributes %v", a)
	}
	thinks := by["agent.think"]
	if len(thinks) != 2 {
		t.Fatalf("%d agent.think spans, want 2; spans %v", len(thinks), spanNames(spans))
	}
	for i, th := range thinks {
		a := attrMap(th)
		want := []string{"tool-calls", "answer"}[i]
		st := res.Steps[i]
		if th.Parent.SpanID() != run.SpanContext.SpanID() || a["toolsift.agent.step"] != itoa(i+1) || a["toolsift.outcome"] != want ||
			a["toolsift.agent.tools"] != itoa(len(st.Offered)) || a["toolsift.agent.tool_tokens"] != itoa(st.ToolTokens) || st.ToolTokens == 0 ||
			a["gen_ai.usage.input_tokens"] != itoa(st.Usage.PromptTokens) {
			t.Errorf("agent.think %d: parent %s (want %s), attributes %v; step offered %d tools, %d tokens", i+1, th.Parent.SpanID(), run.SpanContext.SpanID(), a, len(st.Offered), st.ToolTokens)
		}
		if !strings.Contains(a["toolsift.agent.tool_names"], "t__get_weather") {
			t.Errorf("agent.think %d offered %s, want t__get_weather among them", i+1, a["toolsift.agent.tool_names"])
		}
	}
	for name, want := range map[string]struct {
		server, outcome string
		status          codes.Code
	}{
		"call t__get_weather":  {"t", "ok", codes.Unset},
		"call t__no_such_tool": {"", "unknown_tool", codes.Error},
	} {
		if len(by[name]) != 1 {
			t.Errorf("%d %s spans, want 1; spans %v", len(by[name]), name, spanNames(spans))
			continue
		}
		c := by[name][0]
		a := attrMap(c)
		if c.Parent.SpanID() != run.SpanContext.SpanID() || c.SpanKind != trace.SpanKindClient || a["toolsift.agent.step"] != "1" ||
			a["toolsift.server"] != want.server || a["toolsift.outcome"] != want.outcome || c.Status.Code != want.status {
			t.Errorf("%s: parent %s (want %s), kind %v, status %v, attributes %v", name, c.Parent.SpanID(), run.SpanContext.SpanID(), c.SpanKind, c.Status, a)
		}
		if !c.StartTime.After(thinks[0].EndTime) && !c.StartTime.Equal(thinks[0].EndTime) {
			t.Errorf("%s started %v, before the first step's think ended %v", name, c.StartTime, thinks[0].EndTime)
		}
	}
}

func attrMap(s tracetest.SpanStub) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

func itoa(n int) string { return strconv.Itoa(n) }

func spanNames(spans tracetest.SpanStubs) []string {
	var n []string
	for _, s := range spans {
		n = append(n, s.Name)
	}
	return n
}

// discardSpans is a span exporter that drops what it is given.
type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }

// BenchmarkRunTracing: what Options.Tracer costs a one-step run over a
// catalog of 1,000 tools (BenchmarkStep's): off (no spans: a nil check
// each) and on (an agent.run and an agent.think span, batched to an
// exporter that drops them).
func BenchmarkRunTracing(b *testing.B) {
	tok := tokenizer(b)
	tools := synthTools(1_000)
	ix, _ := index(b, tools, 0)
	th, err := think.New(ix, &think.Options{Tokenizer: tok})
	if err != nil {
		b.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardSpans{}))
	defer tp.Shutdown(context.Background())
	for _, c := range []struct {
		name   string
		tracer trace.TracerProvider
	}{{"off", nil}, {"on", tp}} {
		b.Run(c.name, func(b *testing.B) {
			a, err := agent.New(answerModel{}, indexTools{ix, th}, &agent.Options{Tokenizer: tok, Tracer: c.tracer})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			if _, err := a.Run(ctx, "warm up"); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := a.Run(ctx, "What is the weather forecast for Paris for the next three days?"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package agent

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// tracerName is the instrumentation scope of the agent's spans.
const tracerName = "github.com/toolsift/toolsift/agent"

// The attributes of the agent's spans (docs/library.md, "Traces").
const (
	attrStep         = attribute.Key("toolsift.agent.step")
	attrSteps        = attribute.Key("toolsift.agent.steps")
	attrOffered      = attribute.Key("toolsift.agent.tools")
	attrOfferedNames = attribute.Key("toolsift.agent.tool_names")
	attrToolTokens   = attribute.Key("toolsift.agent.tool_tokens")
	attrToolCalls    = attribute.Key("toolsift.agent.tool_calls")
	attrInputTokens  = attribute.Key("gen_ai.usage.input_tokens")
	attrOutputTokens = attribute.Key("gen_ai.usage.output_tokens")
	attrTool         = attribute.Key("gen_ai.tool.name")
	attrServer       = attribute.Key("toolsift.server")
	attrOutcome      = attribute.Key("toolsift.outcome")
)

// startRun starts the span of one Run or Continue, a child of ctx's; a
// nil tracer starts none.
func (a *Agent) startRun(ctx context.Context) (context.Context, trace.Span) {
	if a.tracer == nil {
		return ctx, nil
	}
	return a.tracer.Start(ctx, "agent.run")
}

// endRun ends span (none when nil) with the run's steps, tokens and
// outcome: answer, max-steps, cancelled or error.
func endRun(ctx context.Context, span trace.Span, res *Result, err error) {
	if span == nil {
		return
	}
	outcome := "answer"
	switch {
	case err == nil:
	case errors.Is(err, ErrMaxSteps):
		outcome = "max-steps"
	case ctx.Err() != nil:
		outcome = "cancelled"
	default:
		outcome = "error"
		span.SetStatus(codes.Error, "run failed")
	}
	span.SetAttributes(attrSteps.Int(len(res.Steps)), attrInputTokens.Int(res.Usage.PromptTokens),
		attrOutputTokens.Int(res.Usage.CompletionTokens), attrOutcome.String(outcome))
	span.End()
}

// startThink starts the span of step n's Think and model call, a child
// of the run's; a nil tracer starts none.
func (a *Agent) startThink(ctx context.Context, n int) (context.Context, trace.Span) {
	if a.tracer == nil {
		return ctx, nil
	}
	return a.tracer.Start(ctx, "agent.think", trace.WithAttributes(attrStep.Int(n)))
}

// endThink ends span (none when nil) with what st offered and the
// model's outcome: tool-calls, answer or error.
func endThink(span trace.Span, st *Step, outcome string) {
	if span == nil {
		return
	}
	names := make([]string, len(st.Offered))
	for i, o := range st.Offered {
		names[i] = o.Name
	}
	span.SetAttributes(attrOffered.Int(len(st.Offered)), attrOfferedNames.StringSlice(names), attrToolTokens.Int(st.ToolTokens),
		attrToolCalls.Int(len(st.Message.ToolCalls)), attrInputTokens.Int(st.Usage.PromptTokens),
		attrOutputTokens.Int(st.Usage.CompletionTokens), attrOutcome.String(outcome))
	if outcome == "error" {
		span.SetStatus(codes.Error, "step failed")
	}
	span.End()
}

// startAct starts the span of one tool call of step n, named "call " and
// the tool, a child of the run's; a nil tracer starts none.
func (a *Agent) startAct(ctx context.Context, n int, name string) (context.Context, trace.Span) {
	if a.tracer == nil {
		return ctx, nil
	}
	return a.tracer.Start(ctx, "call "+name, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attrStep.Int(n), attrTool.String(name)))
}

// endAct ends span (none when nil) with the call's server (of a tool of
// the catalog) and outcome; status Error for a call that did not reach
// an answer of its tool (neither ok, tool-error nor search).
func endAct(span trace.Span, c *Call, server string) {
	if span == nil {
		return
	}
	span.SetAttributes(attrServer.String(server), attrOutcome.String(string(c.Outcome)))
	switch c.Outcome {
	case OutcomeOK, OutcomeToolError, OutcomeSearch:
	default:
		span.SetStatus(codes.Error, string(c.Outcome))
	}
	span.End()
}

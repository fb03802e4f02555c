package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/toolsift/toolsift/budget"
	"github.com/toolsift/toolsift/internal/textproc"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
)

// DefaultSystem is the system prompt used when Options.System is empty.
const DefaultSystem = "You are a capable assistant. Complete the user's task, calling the tools you are given when they help. " +
	"The tools on offer can change between steps as the task moves on: call only tools that are offered now. " +
	"If no offered tool fits the next step and search_tools is offered, call it to find one. " +
	"When the task is done, answer the user without calling tools."

// Run starts a conversation with task and runs it until the model answers
// without tool calls, Options.MaxSteps is reached (ErrMaxSteps) or ctx
// ends. The Result is never nil: on error it holds the transcript so far.
func (a *Agent) Run(ctx context.Context, task string) (*Result, error) {
	system := a.opts.System
	if system == "" {
		system = DefaultSystem
	}
	msgs := []tool.Message{{Role: tool.RoleSystem, Content: system}, {Role: tool.RoleUser, Content: task}}
	return a.loop(ctx, msgs, nil)
}

// Continue adds msg as the user's next message to the conversation in
// prev and runs it like Run. Tools used in prev stay sticky. prev is not
// modified; nil prev is the same as Run(ctx, msg).
func (a *Agent) Continue(ctx context.Context, prev *Result, msg string) (*Result, error) {
	if prev == nil {
		return a.Run(ctx, msg)
	}
	msgs := append(slices.Clone(prev.Messages), tool.Message{Role: tool.RoleUser, Content: msg})
	return a.loopFrom(ctx, msgs, slices.Clone(prev.Used), prev)
}

// run is the state of one Run or Continue.
type run struct {
	a   *Agent
	res *Result
	// found names tools that join the next step only (search results,
	// close matches of an unknown name); Think skips names it lacks.
	found []string
	// prev is the previous request's tools (think.Offered, as sent) and
	// prompt; steps counts the requests made before, earlier turns'
	// included.
	prev     []think.Offered
	prevSent *prompt
	steps    int
	// deferred is set when the catalog goes as deferred tools (defer.go).
	deferred *deferral
	// learned are the successful calls of offered tools, with the query
	// of their step, told to a Recorder when the run ends (record).
	learned []learnedCall

	emitMu sync.Mutex
}

func (a *Agent) loop(ctx context.Context, msgs []tool.Message, used []string) (*Result, error) {
	return a.loopFrom(ctx, msgs, used, nil)
}

// loopFrom runs the loop; a previous turn (prev, may be nil) gives the
// request the first step's is measured against and kept stable with.
func (a *Agent) loopFrom(ctx context.Context, msgs []tool.Message, used []string, prev *Result) (res *Result, err error) {
	r := &run{a: a, res: &Result{Messages: msgs, Used: used}}
	ctx, span := a.startRun(ctx) // trace.go; nil without Options.Tracer
	if span != nil {
		defer func() { endRun(ctx, span, res, err) }()
	}
	defer r.record(ctx)
	if prev != nil {
		r.prev, r.prevSent, r.steps = prev.last, prev.lastSent, prev.steps
		r.res.last, r.res.lastSent, r.res.steps = prev.last, prev.lastSent, prev.steps // kept by a turn that makes no request
	}
	for n := 1; ; n++ {
		done, err := r.step(ctx, n)
		if err != nil || done {
			return r.res, err
		}
		if n == a.opts.MaxSteps {
			return r.res, fmt.Errorf("%w: %d steps without an answer", ErrMaxSteps, n)
		}
	}
}

// step runs step n and reports whether the model answered.
func (r *run) step(ctx context.Context, n int) (bool, error) {
	a := r.a
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("agent: step %d: %w", n, err)
	}
	st := Step{N: n, Query: r.query()}
	tctx, span := a.startThink(ctx, n) // trace.go; nil without Options.Tracer

	// Think: rank, then fit into the budget; with deferred tools, the
	// first step's tools stay for the whole run (defer.go).
	var off think.Offer
	if r.deferred != nil {
		off = r.deferred.offer
	} else {
		treq := think.Request{Query: st.Query, Found: r.found, Previous: r.prev, Steps: r.steps}
		if r.prevSent != nil {
			_, treq.MessageTokens = r.prevSent.tokens()
		}
		var err error
		if off, err = a.tools.Think(tctx, treq); err != nil {
			endThink(span, &st, "error")
			return false, fmt.Errorf("agent: step %d: %w", n, err)
		}
		if n == 1 {
			if r.deferred = r.deferTools(off); r.deferred != nil {
				off = r.deferred.offer // without its listed tools
			}
		}
		st.Latency.Retrieve, st.Latency.Select = off.Retrieve, off.Select
	}
	r.found = nil
	req := Request{Tools: make([]ToolDef, len(off.Tools))}
	if r.deferred != nil {
		req.Deferred = r.deferred.deferred
		st.DeferredTools, st.DeferredTokens = len(req.Deferred), r.deferred.tokens
	}
	st.AllToolsTokens, st.AllTools = off.AllTokens, off.AllTools
	offered := make([]OfferedTool, len(off.Tools))
	for i, o := range off.Tools {
		offered[i] = OfferedTool{Name: o.Tool.Name, Tokens: o.Tokens, Tier: o.Tier, Score: o.Score, Reason: o.Reason}
		req.Tools[i] = ToolDef{Name: o.Tool.Name, Description: o.Description, Parameters: o.Parameters,
			Server: o.Tool.Server, OriginalName: o.Tool.OriginalName}
	}
	st.Offered = offered
	st.ToolTokens = off.Tokens
	sent, pc := r.measure(r.prevSent, offered, req.Tools, r.res.Messages)
	pc.Evicted = off.Evicted
	st.PromptCache = pc
	r.prev, r.prevSent = off.Tools, &sent
	r.steps++
	r.res.last, r.res.lastSent, r.res.steps = off.Tools, &sent, r.steps
	// The step is recorded however it ends, so a failed run shows what it
	// offered.
	defer func() {
		r.res.Steps = append(r.res.Steps, st)
		r.res.Usage = r.res.Usage.Add(st.Usage)
		r.res.ToolTokens += st.ToolTokens
		r.res.AllToolsTokens += st.AllToolsTokens
		r.res.CacheableTokens += st.PromptCache.CacheableTokens
		r.res.UncachedTokens += st.PromptCache.UncachedTokens
		if st.PromptCache.ToolsChanged {
			r.res.ToolListChanges++
		}
		r.res.EstimatedCost += st.EstimatedCost
		r.res.ReportedCost += st.ReportedCost
	}()
	r.emit(ctx, Event{Kind: EventThink, Step: n, Query: st.Query, Offered: offered,
		ToolTokens: st.ToolTokens, AllToolsTokens: st.AllToolsTokens, AllTools: st.AllTools, PromptCache: pc,
		DeferredTools: st.DeferredTools, DeferredTokens: st.DeferredTokens, Latency: st.Latency.Retrieve + st.Latency.Select})

	// The model.
	t2 := time.Now()
	req.Messages = slices.Clone(r.res.Messages)
	if a.opts.OnEvent != nil {
		req.OnDelta = func(d Delta) { r.emit(ctx, Event{Kind: EventDelta, Step: n, Delta: d}) }
	}
	resp, err := a.model.Complete(tctx, req)
	st.Latency.Model = time.Since(t2)
	if err != nil {
		endThink(span, &st, "error")
		// Every model error wraps ErrModel, a custom Model's too.
		if !errors.Is(err, ErrModel) {
			err = fmt.Errorf("%w: %w", ErrModel, err)
		}
		if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
		return false, fmt.Errorf("agent: step %d: %w", n, err)
	}
	msg := resp.Message
	msg.Role, msg.ToolCallID = tool.RoleAssistant, ""
	msg.ToolCalls = slices.Clone(msg.ToolCalls)
	FillCallIDs(msg.ToolCalls)
	for i := range msg.ToolCalls {
		if msg.ToolCalls[i].Search {
			msg.ToolCalls[i].Name = think.SearchToolName
		}
	}
	msg.Hosted = slices.Clone(msg.Hosted)
	for _, h := range msg.Hosted {
		// The provider's own calls of catalog tools make them sticky too.
		if _, ok := a.tools.Get(h.Tool); ok && !slices.Contains(r.res.Used, h.Tool) {
			r.res.Used = append(r.res.Used, h.Tool)
		}
	}
	st.Message, st.Usage = msg, resp.Usage
	st.EstimatedCost, st.ReportedCost = r.stepCost(&st) // the whole reply was paid for
	if limit := a.opts.MaxToolCalls; limit > 0 && len(msg.ToolCalls) > limit {
		// Not run, and not sent back: the model is told below.
		st.DroppedCalls = len(msg.ToolCalls) - limit
		msg.ToolCalls = msg.ToolCalls[:limit:limit]
		st.Message = msg
		a.log.Warn("agent: tool calls past the limit not run", slog.Int("step", n),
			slog.Int("calls", limit+st.DroppedCalls), slog.Int("max_tool_calls", limit))
	}
	r.res.Messages = append(r.res.Messages, msg)
	if span != nil {
		outcome := "tool-calls"
		if len(msg.ToolCalls) == 0 {
			outcome = "answer"
		}
		endThink(span, &st, outcome)
	}
	r.emit(ctx, Event{Kind: EventModel, Step: n, Message: msg, Usage: resp.Usage, EstimatedCost: st.EstimatedCost, Latency: st.Latency.Model})

	if len(msg.ToolCalls) == 0 {
		r.res.Answer = msg.Content
		r.emit(ctx, Event{Kind: EventAnswer, Step: n, Message: msg})
		return true, nil
	}

	// Act and observe.
	t3 := time.Now()
	st.Calls = r.act(ctx, n, msg.ToolCalls, offered)
	r.learnFrom(st.Query, st.Calls)
	st.Latency.Tools = time.Since(t3)
	if st.DroppedCalls > 0 {
		last := &st.Calls[len(st.Calls)-1]
		last.Observation += fmt.Sprintf("\n\n[toolsift: refused %d more tool calls of your reply, not run: it asked for %d, more than the %d one reply may make (agent.Options.MaxToolCalls). Ask again for the ones still needed.]",
			st.DroppedCalls, len(msg.ToolCalls)+st.DroppedCalls, len(msg.ToolCalls))
	}
	for _, c := range st.Calls {
		m := tool.Message{Role: tool.RoleTool, ToolCallID: c.ID, Content: c.Observation}
		if c.Outcome == OutcomeSearch {
			m.Found = slices.Clone(c.Found)
		}
		r.res.Messages = append(r.res.Messages, m)
	}
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("agent: step %d: %w", n, err)
	}
	return false, nil
}

// query describes the conversation's state for the retriever by the one
// rule, think.ConversationQuery (the latest user message, the model's
// latest message after it, the tool results that followed), with the tools
// used so far.
func (r *run) query() retrieval.Query {
	q, _ := think.ConversationQuery(r.res.Messages)
	q.Used = slices.Clone(r.res.Used)
	return q
}

// act runs the step's tool calls, at most MaxParallel at once, and returns
// them in call order. It always waits for every call it started.
func (r *run) act(ctx context.Context, n int, calls []tool.ToolCall, offered []OfferedTool) []Call {
	a := r.a
	isOffered := map[string]bool{}
	for _, o := range offered {
		isOffered[o.Name] = true
	}
	if r.deferred != nil {
		for name := range r.deferred.loaded {
			isOffered[name] = true // loaded by a search earlier in the run
		}
	}
	out := make([]Call, len(calls))
	// The catalog is asked about each call once, here.
	tools := make([]tool.Tool, len(calls))
	inCatalog := make([]bool, len(calls))
	sem := make(chan struct{}, a.opts.MaxParallel)
	var wg sync.WaitGroup
	for i, tc := range calls {
		tc.Name, tools[i], inCatalog[i] = r.resolve(tc.Name)
		out[i] = Call{ToolCall: tc, Offered: isOffered[tc.Name]}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			out[i].Outcome, out[i].Observation = OutcomeCancelled, "error: the run was cancelled before this call started"
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			r.emit(ctx, Event{Kind: EventToolCall, Step: n, Call: out[i]})
			cctx, span := a.startAct(ctx, n, out[i].Name) // trace.go; nil without Options.Tracer
			start := time.Now()
			r.exec(cctx, &out[i], tools[i], inCatalog[i])
			out[i].Latency = time.Since(start)
			endAct(span, &out[i], tools[i].Server)
			out[i].RawTokens = a.tok.Count(out[i].Observation)
			out[i].Observation = budget.Truncate(a.tok, out[i].Observation, a.opts.ObservationBudget)
			out[i].Tokens = a.tok.Count(out[i].Observation)
			r.emit(ctx, Event{Kind: EventToolResult, Step: n, Call: out[i], Latency: out[i].Latency})
		}()
	}
	wg.Wait()
	for i, c := range out {
		switch {
		case c.Outcome == OutcomeSearch || c.Outcome == OutcomeUnknownTool:
			r.found = append(r.found, c.Found...)
			if r.deferred != nil && c.Outcome == OutcomeSearch {
				r.deferred.load(c.Found)
			}
		case inCatalog[i] && !slices.Contains(r.res.Used, c.Name):
			r.res.Used = append(r.res.Used, c.Name)
		}
	}
	return out
}

// learnedCall is a call the run's Recorder is told of: q led to name.
type learnedCall struct {
	q    retrieval.Query
	name string
}

// learnFrom notes each successful call of a tool the step offered (or
// that a search found and a deferred catalog loaded), with q, the step's
// query, for record. A failed, refused or unoffered call, and search_tools
// itself, teach nothing.
func (r *run) learnFrom(q retrieval.Query, calls []Call) {
	if _, ok := r.a.tools.(Recorder); !ok {
		return
	}
	for _, c := range calls {
		if c.Outcome != OutcomeOK || !c.Offered {
			continue
		}
		if _, inCatalog := r.a.tools.Get(c.Name); inCatalog {
			r.learned = append(r.learned, learnedCall{q, c.Name})
		}
	}
}

// record tells Tools that is a Recorder of the calls learnFrom noted, when
// the run ends however it ends: a run does not rank its own later steps
// with its earlier calls.
func (r *run) record(ctx context.Context) {
	rec, ok := r.a.tools.(Recorder)
	if !ok {
		return
	}
	ctx = context.WithoutCancel(ctx) // a run cancelled after its calls succeeded still teaches
	for _, l := range r.learned {
		if err := rec.Record(ctx, l.q, l.name); err != nil {
			r.a.log.LogAttrs(ctx, slog.LevelWarn, "agent: record the call", slog.String("tool", l.name), slog.Any("error", err))
		}
	}
}

// exec runs one call of tl (the catalog's tool of that name, when
// inCatalog) and fills in its outcome and observation.
func (r *run) exec(ctx context.Context, c *Call, tl tool.Tool, inCatalog bool) {
	a := r.a
	isSearch := c.Name == think.SearchToolName && !inCatalog
	args, err := tool.ObjectArgs(json.RawMessage(c.Arguments))
	if err != nil {
		c.Outcome = OutcomeInvalidArgs
		c.Observation = fmt.Sprintf("error: calling %s: %v. Call it again with a JSON object that matches its parameters.", c.Name, err)
		return
	}
	if isSearch {
		text, found, err := a.tools.SearchTools(ctx, args)
		if err != nil {
			c.Outcome, c.Observation = OutcomeInvalidArgs, "error: "+err.Error()
			if !errors.Is(err, think.ErrSearchArgs) {
				c.Outcome = OutcomeCallError
			}
			return
		}
		c.Outcome, c.Observation = OutcomeSearch, text
		for _, m := range found {
			c.Found = append(c.Found, m.Tool.Name)
		}
		if r.deferred != nil {
			c.Observation, c.Found = r.deferred.fit(c.Observation, c.Found)
		}
		return
	}
	if inCatalog && a.opts.Approve != nil && (a.opts.ApproveAll || !readOnly(tl)) {
		ok, err := a.opts.Approve(ctx, tl, args)
		if !ok || err != nil {
			c.Outcome = OutcomeDenied
			c.Observation = fmt.Sprintf("error: the user did not approve this call of %s. Do not call it again with the same arguments; ask the user or do without it.", c.Name)
			if err != nil {
				c.Observation = fmt.Sprintf("error: the call of %s could not be approved (%v).", c.Name, err)
			}
			return
		}
	}
	// A name that is not in the catalog goes to the source anyway: only it
	// knows whether the tool never existed or its server is restarting.
	callCtx, cancel := context.WithTimeout(ctx, a.opts.ToolTimeout)
	defer cancel()
	res, err := a.tools.Call(callCtx, c.Name, args)
	switch {
	case errors.Is(err, tool.ErrUnknown):
		c.Outcome = OutcomeUnknownTool
		c.Observation, c.Found = r.closeMatches(ctx, c.Name)
	case ctx.Err() != nil:
		c.Outcome, c.Observation = OutcomeCancelled, "error: the run was cancelled during this call"
	case err != nil && errors.Is(callCtx.Err(), context.DeadlineExceeded):
		c.Outcome = OutcomeTimeout
		c.Observation = fmt.Sprintf("error: %s did not answer within %s and was cancelled. Try a smaller request or another tool.", c.Name, a.opts.ToolTimeout)
	case errors.Is(err, tool.ErrInvalidArguments):
		c.Outcome, c.Observation = OutcomeInvalidArgs, "error: "+err.Error()
	case errors.Is(err, tool.ErrUnavailable):
		c.Outcome = OutcomeUnavailable
		c.Observation = fmt.Sprintf("error: %s is temporarily unavailable (%v). You may try it again later, or use another tool.", c.Name, err)
	case err != nil:
		c.Outcome, c.Observation = OutcomeCallError, "error: "+err.Error()
	case res.IsError:
		c.Outcome, c.Observation = OutcomeToolError, res.Content
		if !strings.HasPrefix(strings.ToLower(strings.TrimSpace(res.Content)), "error") {
			c.Observation = "error: " + res.Content
		}
	default:
		c.Outcome, c.Observation = OutcomeOK, res.Content
		if strings.TrimSpace(res.Content) == "" {
			c.Observation = "(no output)"
		}
	}
}

// resolve maps a name the model wrote to the catalog's spelling when it
// differs only by white space or by a "functions." prefix, as some open
// models write them, and returns the catalog's tool of that name, if any.
func (r *run) resolve(name string) (string, tool.Tool, bool) {
	trimmed := strings.TrimSpace(name)
	for _, n := range []string{trimmed, strings.TrimPrefix(trimmed, "functions.")} {
		if tl, ok := r.a.tools.Get(n); ok {
			return n, tl, true
		}
		if n == think.SearchToolName {
			return n, tool.Tool{}, false
		}
		if !strings.HasPrefix(trimmed, "functions.") {
			break // the same name again
		}
	}
	return name, tool.Tool{}, false
}

// closeMatches answers a call to a tool that does not exist with the tools
// whose name or purpose is closest; they join the next step.
func (r *run) closeMatches(ctx context.Context, name string) (string, []string) {
	q := strings.NewReplacer("__", " ", "_", " ", "-", " ", ".", " ").Replace(name)
	args, _ := json.Marshal(think.SearchArgs{Query: q, K: 3})
	var found []string
	var lines []string
	if _, matches, err := r.a.tools.SearchTools(ctx, args); err == nil {
		for _, m := range matches {
			found = append(found, m.Tool.Name)
			line := "- " + m.Tool.Name
			if d := textproc.FirstSentence(m.Tool.Description, 120); d != "" {
				line += ": " + d
			}
			lines = append(lines, line)
		}
	}
	if len(found) == 0 {
		return fmt.Sprintf("error: there is no tool named %q, and no similar one.", name), nil
	}
	return fmt.Sprintf("error: there is no tool named %q. Similar tools, which you can call at your next step:\n%s",
		name, strings.Join(lines, "\n")), found
}

// emit logs ev and passes it to OnEvent, one event at a time.
func (r *run) emit(ctx context.Context, ev Event) {
	a := r.a
	r.emitMu.Lock()
	defer r.emitMu.Unlock()
	switch ev.Kind {
	case EventThink:
		names := make([]string, len(ev.Offered))
		for i, o := range ev.Offered {
			names[i] = o.Name
		}
		a.log.LogAttrs(ctx, slog.LevelInfo, "agent think", slog.Int("step", ev.Step),
			slog.Any("tools", names), slog.Int("tool_tokens", ev.ToolTokens),
			slog.Int("all_tools_tokens", ev.AllToolsTokens), slog.Int("cacheable_prompt_tokens", ev.PromptCache.CacheableTokens),
			slog.Int("uncached_prompt_tokens", ev.PromptCache.UncachedTokens), slog.Bool("tools_changed", ev.PromptCache.ToolsChanged),
			slog.Int("evicted", len(ev.PromptCache.Evicted)), slog.Float64("latency_ms", millis(ev.Latency)))
	case EventModel:
		a.log.LogAttrs(ctx, slog.LevelInfo, "agent model", slog.Int("step", ev.Step),
			slog.Int("prompt_tokens", ev.Usage.PromptTokens), slog.Int("completion_tokens", ev.Usage.CompletionTokens),
			slog.Int("tool_calls", len(ev.Message.ToolCalls)), slog.Float64("latency_ms", millis(ev.Latency)))
	case EventToolCall:
		a.log.LogAttrs(ctx, slog.LevelDebug, "agent tool call", slog.Int("step", ev.Step),
			slog.String("tool", ev.Call.Name), slog.String("id", ev.Call.ID), slog.Bool("offered", ev.Call.Offered))
	case EventToolResult:
		a.log.LogAttrs(ctx, slog.LevelDebug, "agent tool result", slog.Int("step", ev.Step),
			slog.String("tool", ev.Call.Name), slog.String("outcome", string(ev.Call.Outcome)),
			slog.Int("tokens", ev.Call.Tokens), slog.Int("raw_tokens", ev.Call.RawTokens), slog.Float64("latency_ms", millis(ev.Latency)))
	case EventAnswer:
		a.log.LogAttrs(ctx, slog.LevelInfo, "agent answer", slog.Int("step", ev.Step), slog.Int("chars", len(ev.Message.Content)))
	}
	if a.opts.OnEvent != nil {
		a.opts.OnEvent(ev)
	}
}

// readOnly reports whether a tool says it changes nothing.
func readOnly(t tool.Tool) bool {
	return t.Annotations != nil && t.Annotations.ReadOnlyHint != nil && *t.Annotations.ReadOnlyHint
}

// FillCallIDs gives an id ("call_0", ...) to calls a server sent without
// one, so that tool messages can answer them: the loop does it for every
// Model's reply, and a Model whose API may omit ids does it too, for
// callers of Complete.
func FillCallIDs(calls []tool.ToolCall) {
	for i := range calls {
		if calls[i].ID == "" {
			id := fmt.Sprintf("call_%d", i)
			for slices.ContainsFunc(calls, func(c tool.ToolCall) bool { return c.ID == id }) {
				id += "_"
			}
			calls[i].ID = id
		}
	}
}

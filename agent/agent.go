package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/toolsift/toolsift/budget"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
	"go.opentelemetry.io/otel/trace"
)

// Errors of this package. Provider errors are wrapped in ErrModel.
var (
	// ErrMaxSteps: the model still asked for tools after Options.MaxSteps
	// steps. The Result holds the transcript so far.
	ErrMaxSteps = errors.New("agent: max steps reached")
	// ErrOptions reports invalid Options or Tools given to New.
	ErrOptions = errors.New("agent: invalid options")
)

// Tools is what the agent chooses from and calls through:
// *toolsift.Toolset implements it (toolsift.Open), and Recorder, so that
// its usage memory learns from the run's calls. Implementations must be
// safe for concurrent use.
type Tools interface {
	// Think chooses the tools of one step (think.Thinker.Think).
	Think(ctx context.Context, req think.Request) (think.Offer, error)
	// SearchTools answers a search_tools call (args is its JSON
	// arguments): the text for the model and the tools found. Bad
	// arguments give an error wrapping think.ErrSearchArgs, whose text
	// the model sees.
	SearchTools(ctx context.Context, args json.RawMessage) (string, []retrieval.Match, error)
	// Get returns a tool of the catalog by name.
	Get(name string) (tool.Tool, bool)
	// Call runs a tool by name. A tool's own failure is a Result with
	// IsError set; an error means the call could not be made and wraps
	// tool.ErrUnknown (no such tool), tool.ErrUnavailable (its server is
	// down or restarting: the model may try again) or
	// tool.ErrInvalidArguments. It must honour ctx's deadline.
	Call(ctx context.Context, name string, args json.RawMessage) (tool.Result, error)
}

// Recorder is implemented by Tools that learn from the calls a run makes
// (toolsift.Toolset: its usage memory). When a run (or a Continue) ends,
// however it ends, it tells it of every call that succeeded (OutcomeOK)
// of a tool its step offered, whether Think chose it or a search_tools
// call found it: that step's query q (Step.Query) led to the tool named
// name. Failed, refused and unoffered calls are not told, and a run does
// not rank its own later steps with its earlier calls. An error is
// logged.
type Recorder interface {
	Record(ctx context.Context, q retrieval.Query, name string) error
}

// Defaults of Options. The tool budget and retrieval depth are the Think
// step's: think.DefaultBudget and think.DefaultK.
const (
	DefaultObservationBudget = 2000
	DefaultMaxSteps          = 10
	DefaultToolTimeout       = 60 * time.Second
)

// The defaults of Options' fields no caller computes with.
const (
	defaultMaxParallel       = 4
	defaultMaxToolCalls      = 64
	defaultMaxDeferredTokens = 50_000
)

// Options configure an Agent. The zero value (or nil) gives the defaults.
type Options struct {
	// System is the system prompt. Empty means a short default that tells
	// the model its tools can change between steps (and about search_tools).
	System string

	// ObservationBudget is the most tokens of one tool result the model
	// sees; longer results are cut with a note. Default 2000.
	ObservationBudget int

	// MaxSteps is the most model calls in one Run or Continue. Default 10.
	MaxSteps int
	// ToolTimeout bounds each tool call; a call that takes longer is
	// cancelled and the model is told. Default 60s.
	ToolTimeout time.Duration
	// MaxParallel is how many tool calls of one step run at once.
	// Default 4.
	MaxParallel int
	// MaxToolCalls is the most tool calls of one model reply that run.
	// The calls after the first MaxToolCalls are not run nor kept in the
	// conversation (Step.DroppedCalls counts them), and the model is told
	// in the last tool message, so that it asks again for what it still
	// needs. Default 64 (docs/limits.md); negative means no limit.
	MaxToolCalls int

	// Approve, if set, is asked before a tool call runs: for tools not
	// marked read-only (annotations readOnlyHint) by default, for every
	// call with ApproveAll. It gets the tool and the arguments; false (or
	// an error) denies the call, and the model is told the user denied it.
	// It may be called from several goroutines at once.
	Approve func(ctx context.Context, t tool.Tool, args json.RawMessage) (bool, error)
	// ApproveAll asks Approve for read-only tools too.
	ApproveAll bool

	// Prices is the price model of Step.EstimatedCost and ReportedCost;
	// zero means budget.DefaultPrices. (The Think step weighs evictions
	// with think.Options.Prices: give both the same prices.)
	Prices budget.Prices

	// MaxDeferredTokens is the largest catalog, in tokens at full tier,
	// sent as deferred tools to a DeferringModel; a larger one gets
	// per-step selection. Default 50,000; negative
	// never defers.
	MaxDeferredTokens int

	// Tokenizer counts the tokens of observations; nil means o200k_base.
	Tokenizer *budget.Tokenizer
	// Logger receives one record per event (Debug for tool calls, Info for
	// steps and answers); nil discards them.
	Logger *slog.Logger
	// OnEvent, if set, receives every Event as it happens. Calls are made
	// one at a time (never concurrently) for one Run; tool events of one
	// step may come from different goroutines.
	OnEvent func(Event)
	// Tracer, when set, traces each Run and Continue (docs/library.md,
	// "Traces"): a span agent.run, the child of ctx's span, and within
	// it an agent.think span per step (its Think and model call: the
	// step, the tools offered and their tokens, the tokens used, the
	// model's outcome) and a "call TOOL" span per tool call (its outcome).
	// Attributes hold tool names, counts and outcomes, never the task,
	// the messages, arguments or results. nil: no spans.
	Tracer trace.TracerProvider
}

// Agent is a ReAct loop that picks its tools afresh at every Think step.
// It holds no conversation state: Run and Continue may be called
// concurrently.
type Agent struct {
	model  Model
	tools  Tools
	opts   Options
	tok    *budget.Tokenizer
	log    *slog.Logger
	prices budget.Prices
	tracer trace.Tracer // nil: no spans (Options.Tracer)
}

// New returns an Agent that asks model and runs tools.
func New(model Model, tools Tools, opts *Options) (*Agent, error) {
	if model == nil {
		return nil, fmt.Errorf("%w: nil Model", ErrOptions)
	}
	if tools == nil {
		return nil, fmt.Errorf("%w: nil Tools", ErrOptions)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	switch {
	case o.ObservationBudget < 0:
		return nil, fmt.Errorf("%w: negative ObservationBudget %d", ErrOptions, o.ObservationBudget)
	case o.MaxSteps < 0:
		return nil, fmt.Errorf("%w: negative MaxSteps %d", ErrOptions, o.MaxSteps)
	case o.ToolTimeout < 0:
		return nil, fmt.Errorf("%w: negative ToolTimeout %s", ErrOptions, o.ToolTimeout)
	case o.MaxParallel < 0:
		return nil, fmt.Errorf("%w: negative MaxParallel %d", ErrOptions, o.MaxParallel)
	}
	if o.ObservationBudget == 0 {
		o.ObservationBudget = DefaultObservationBudget
	}
	if o.MaxSteps == 0 {
		o.MaxSteps = DefaultMaxSteps
	}
	if o.ToolTimeout == 0 {
		o.ToolTimeout = DefaultToolTimeout
	}
	if o.MaxParallel == 0 {
		o.MaxParallel = defaultMaxParallel
	}
	if o.MaxToolCalls == 0 {
		o.MaxToolCalls = defaultMaxToolCalls
	}
	if o.MaxDeferredTokens == 0 {
		o.MaxDeferredTokens = defaultMaxDeferredTokens
	}
	a := &Agent{model: model, tools: tools, opts: o, tok: o.Tokenizer, log: o.Logger, prices: resolvePrices(o.Prices)}
	if a.tok == nil {
		tok, err := budget.NewTokenizer("", "")
		if err != nil {
			return nil, fmt.Errorf("%w: tokenizer: %w", ErrOptions, err)
		}
		a.tok = tok
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if o.Tracer != nil {
		a.tracer = o.Tracer.Tracer(tracerName)
	}
	return a, nil
}

// Result is the outcome of Run or Continue, complete or partial.
type Result struct {
	// Answer is the model's final message content; empty unless the run
	// ended with an answer.
	Answer string `json:"answer"`
	// Messages is the whole conversation: system prompt, earlier turns,
	// and this turn's messages. Every assistant tool call in it is answered
	// by a tool message, even when the run was cut short, so a Result can
	// always be continued.
	Messages []tool.Message `json:"messages"`
	// Steps are this turn's steps, one per model call.
	Steps []Step `json:"steps"`
	// Used names the tools called so far in the conversation, in order of
	// first use; they stay available (sticky) in later steps.
	Used []string `json:"used"`
	// Usage sums the provider's usage over Steps.
	Usage Usage `json:"usage"`
	// ToolTokens sums the tool-definition tokens offered over Steps;
	// AllToolsTokens what offering every tool at every step would have
	// cost.
	ToolTokens     int `json:"tool_tokens"`
	AllToolsTokens int `json:"all_tools_tokens"`
	// CacheableTokens and UncachedTokens sum the Steps' PromptCache;
	// ToolListChanges counts the steps whose tool list differs from the
	// step before's.
	CacheableTokens int `json:"cacheable_prompt_tokens"`
	UncachedTokens  int `json:"uncached_prompt_tokens"`
	ToolListChanges int `json:"tool_list_changes"`
	// EstimatedCost and ReportedCost sum the Steps' (US dollars).
	EstimatedCost float64 `json:"estimated_cost_usd"`
	ReportedCost  float64 `json:"reported_cost_usd,omitempty"`

	// last is the last request's tools and prompt, steps the requests of
	// the conversation so far: Continue goes on from them.
	last     []think.Offered
	lastSent *prompt
	steps    int
}

// Step is one Think → Act → Observe round.
type Step struct {
	// N counts steps from 1 within a Run or Continue.
	N int `json:"n"`
	// Query is what the retriever was asked.
	Query retrieval.Query `json:"query"`
	// Offered are the tools sent to the model, in request order.
	Offered []OfferedTool `json:"offered"`
	// ToolTokens is the cost of Offered; AllToolsTokens the cost of every
	// tool in the catalog at full tier (AllTools of them), what a plain
	// agent would send.
	ToolTokens     int `json:"tool_tokens"`
	AllToolsTokens int `json:"all_tools_tokens"`
	AllTools       int `json:"all_tools"`
	// PromptCache is how much of this step's request repeats the previous
	// one's prefix.
	PromptCache PromptCache `json:"prompt_cache"`
	// DeferredTools and DeferredTokens count the tools sent as deferred
	// (Request.Deferred) and their tokens at full tier; zero when the
	// step chose its tools itself.
	DeferredTools  int `json:"deferred_tools,omitempty"`
	DeferredTokens int `json:"deferred_tokens,omitempty"`
	// Usage is what the provider reported for this step's model call
	// (PromptTokens includes the tools).
	Usage Usage `json:"usage"`
	// EstimatedCost is the step's cost in US dollars under Options.Prices:
	// PromptCache's cacheable tokens at the cached-input price, the
	// uncached ones at the cache-write (or input) price, the completion at
	// the output price (counted when the provider reports no usage).
	// ReportedCost is the same from the provider's Usage, when reported.
	EstimatedCost float64 `json:"estimated_cost_usd"`
	ReportedCost  float64 `json:"reported_cost_usd,omitempty"`
	// Message is the model's answer.
	Message tool.Message `json:"message"`
	// Calls are the tool calls of Message with their outcomes, in order.
	Calls []Call `json:"calls,omitempty"`
	// DroppedCalls counts the calls of the model's reply past
	// Options.MaxToolCalls: not run, not in Message.
	DroppedCalls int `json:"dropped_calls,omitempty"`
	// Latency per phase.
	Latency Latency `json:"latency"`
}

// Latency is how long each phase of a step took. In JSON each phase is
// in milliseconds, named so: {"retrieve_ms": 1.25, ...}.
type Latency struct {
	// Retrieve is ranking the tools; Select fitting them into the budget;
	// Model the model call; Tools running the step's tool calls
	// (concurrently, so at most the sum of the calls' latencies).
	Retrieve time.Duration `json:"-"`
	Select   time.Duration `json:"-"`
	Model    time.Duration `json:"-"`
	Tools    time.Duration `json:"-"`
}

// latencyJSON is Latency as JSON: milliseconds, the unit in each name.
type latencyJSON struct {
	Retrieve float64 `json:"retrieve_ms"`
	Select   float64 `json:"select_ms"`
	Model    float64 `json:"model_ms"`
	Tools    float64 `json:"tools_ms"`
}

// MarshalJSON writes each phase in milliseconds.
func (l Latency) MarshalJSON() ([]byte, error) {
	return json.Marshal(latencyJSON{Retrieve: millis(l.Retrieve), Select: millis(l.Select), Model: millis(l.Model), Tools: millis(l.Tools)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (l *Latency) UnmarshalJSON(b []byte) error {
	var j latencyJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*l = Latency{Retrieve: fromMillis(j.Retrieve), Select: fromMillis(j.Select), Model: fromMillis(j.Model), Tools: fromMillis(j.Tools)}
	return nil
}

// millis is d in milliseconds, to the microsecond.
func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func fromMillis(ms float64) time.Duration {
	return time.Duration(ms * float64(time.Millisecond)).Round(time.Microsecond)
}

// OfferedTool is one tool of a step's request. Its Tier is written in
// JSON by name ("full", "short-description", ...).
type OfferedTool struct {
	Name   string      `json:"name"`
	Tokens int         `json:"tokens"`
	Tier   budget.Tier `json:"tier"`
	Score  float64     `json:"score"`
	// Reason is why it was offered: one of think's Reason constants.
	Reason string `json:"reason"`
}

// Outcome of a tool call.
type Outcome string

// Outcomes of a tool call. Every outcome but OutcomeOK and OutcomeSearch
// reaches the model as an error observation.
const (
	OutcomeOK          Outcome = "ok"
	OutcomeToolError   Outcome = "tool_error"        // the tool reported a failure
	OutcomeCallError   Outcome = "call_error"        // the call could not be made (server down, ...)
	OutcomeInvalidArgs Outcome = "invalid_arguments" // not JSON, or not an object
	OutcomeUnknownTool Outcome = "unknown_tool"      // no such tool: close matches were offered
	OutcomeTimeout     Outcome = "timeout"           // cancelled at Options.ToolTimeout
	OutcomeCancelled   Outcome = "cancelled"         // the run's ctx ended
	OutcomeUnavailable Outcome = "unavailable"       // the tool's server is down or restarting; may work later
	OutcomeDenied      Outcome = "denied"            // Options.Approve said no
	OutcomeSearch      Outcome = "search"            // a search_tools call
)

// Call is one executed tool call.
type Call struct {
	tool.ToolCall
	// Offered is false when the model called a tool it was not offered at
	// this step (run anyway when the catalog has it). With deferred
	// tools, the tools a search loaded earlier in the run count as
	// offered.
	Offered bool    `json:"offered"`
	Outcome Outcome `json:"outcome"`
	// Observation is the tool message content the model gets, truncated to
	// Options.ObservationBudget.
	Observation string `json:"observation"`
	// Tokens is the observation's size; RawTokens the result's before
	// truncation.
	Tokens    int `json:"tokens"`
	RawTokens int `json:"raw_tokens"`
	// Found names the tools a search_tools call found, or the close
	// matches of an unknown tool; they join the next step.
	Found []string `json:"found,omitempty"`
	// Latency is how long the call took; in JSON "latency_ms".
	Latency time.Duration `json:"-"`
}

// callJSON is Call with its latency in milliseconds.
type callJSON struct {
	callFields
	LatencyMS float64 `json:"latency_ms"`
}

// callFields is Call without its methods, so that callJSON does not
// recurse into them.
type callFields Call

// MarshalJSON writes the call with "latency_ms".
func (c Call) MarshalJSON() ([]byte, error) {
	return json.Marshal(callJSON{callFields(c), millis(c.Latency)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (c *Call) UnmarshalJSON(b []byte) error {
	var j callJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*c = Call(j.callFields)
	c.Latency = fromMillis(j.LatencyMS)
	return nil
}

// EventKind says what happened.
type EventKind string

// Event kinds, in the order they happen within a step.
const (
	// EventThink: the step's tools are chosen. Query, Offered, ToolTokens,
	// AllToolsTokens, AllTools, DeferredTools, DeferredTokens,
	// PromptCache; Latency is retrieval plus selection.
	EventThink EventKind = "think"
	// EventDelta: a piece of the model's reply as it streams (a model
	// that streams: Stream in its options). Delta. Only OnEvent gets it,
	// not the Logger.
	EventDelta EventKind = "delta"
	// EventModel: the model answered. Message, Usage, EstimatedCost;
	// Latency is the call.
	EventModel EventKind = "model"
	// EventToolCall: a tool call starts. Call (without outcome).
	EventToolCall EventKind = "tool_call"
	// EventToolResult: a tool call ended. Call; Latency is the call.
	EventToolResult EventKind = "tool_result"
	// EventAnswer: the run ended with an answer. Message.
	EventAnswer EventKind = "answer"
)

// Event is a trace record. Fields not listed for its Kind are zero.
type Event struct {
	Kind EventKind
	Step int

	Query                                retrieval.Query
	Offered                              []OfferedTool
	ToolTokens, AllToolsTokens, AllTools int
	PromptCache                          PromptCache
	DeferredTools, DeferredTokens        int

	Delta Delta

	Message       tool.Message
	Usage         Usage
	EstimatedCost float64

	Call Call

	Latency time.Duration
}

// Package agent is a ReAct agent that picks its tools at every step, so it
// stays accurate with thousands of tools, while keeping the provider's
// prompt cache warm.
//
// Each step of [Agent.Run] is Think → Act → Observe:
//
//   - Think: the conversation's state (the user's latest message, the
//     model's latest message and tool calls, the last tool results, the
//     tools used so far) becomes a [retrieval.Query], and [Tools].Think (the
//     think package's one Think step) ranks the catalog and fits the best
//     tools, compressing schemas if need be, into the budget (every tool
//     when the whole catalog fits); the model is called with exactly those
//     tools. The previous step's tools go with the request
//     ([think.Request].Previous): under the default [think.PolicyStable]
//     they keep their place and bytes and new ones are appended, so the
//     prompt's prefix repeats and the provider bills it as cached input.
//   - Act: the model's tool calls run through [Tools].Call, several at once
//     ([Options.MaxParallel]), each bounded by [Options.ToolTimeout], after
//     [Options.Approve] agrees when it is set.
//   - Observe: each result, cut to [Options.ObservationBudget] tokens, goes
//     back as a tool message. The loop ends when the model answers without
//     tool calls, after [Options.MaxSteps] steps ([ErrMaxSteps]), or when ctx
//     ends; the [Result] always holds the transcript so far.
//
// Nothing the model does wrong crashes a run: a call to a tool it was not
// offered runs anyway when the catalog has it (and the tool stays offered,
// "sticky"); a tool name that does not exist is answered with the closest
// tools, which join the next step; a tool whose server is restarting is
// reported as temporarily unavailable, not unknown; arguments that are not a
// JSON object, a failing tool and a tool that hangs become error
// observations. Whenever a tool is left out of a step, the model also gets
// search_tools ([think.SearchTool]) to ask for tools by description; what
// it finds joins the next step.
//
// Deferred tools: APIs that load tools on demand (OpenAI's Responses API
// with defer_loading and a client-executed tool_search; Anthropic's tool
// search with tool_reference) keep their prompt cache while tools are found.
// With such a model (a [DeferringModel]) and a catalog that does not fit the
// budget whole but costs at most [Options.MaxDeferredTokens], the first
// step's tools are loaded for the whole run, the rest of the catalog is sent
// deferred ([Request].Deferred, by name, the same bytes at every step), and
// the API's own search call ([tool.ToolCall].Search) is answered by toolsift's
// ranking ([Tools].SearchTools); the tool message's [tool.Message].Found names
// what it loaded, for the model to render in the API's form. Otherwise, and
// for Chat Completions, tools are chosen per step as above.
//
// Every step is traced: [Result].Steps (query, tools offered with their
// tokens and tier, the provider's usage, calls with outcomes and sizes,
// latency per phase, and the cost of offering every tool instead), an [Event]
// per phase to [Options.OnEvent], and a [log/slog] record per event.
//
// What a run costs is measured from what it sends: [Step].PromptCache
// counts the prompt tokens that repeat the previous request's prefix
// (cacheable) and those that do not, whether the tool list changed and
// which tools were evicted and why; [Step].EstimatedCost prices them with
// [Options.Prices] (a [budget.Prices]: input, cached input, cache write and
// output per million tokens), beside the provider's own cached count
// ([Usage].CachedPromptTokens) and [Step].ReportedCost; [Result] sums
// them.
//
// The chat model is an interface ([Model]); the providers are peers, each in
// its own package so that the loop compiles no SDK: package agent/openaimodel
// implements it with openai-go for OpenAI and any compatible server (vLLM,
// Ollama, llama.cpp, LiteLLM), streaming or not, with the endpoint of a
// provider.Options: openaimodel.NewChat speaks Chat Completions, openaimodel.NewResponses
// the Responses API, statelessly (the conversation goes as input items), with
// deferred tools and hosted MCP servers (openaimodel.HostedMCP: the tools of theirs
// that Think offers go in the mcp tool's allowed_tools); package
// agent/anthropicmodel speaks Anthropic's Messages API. A streaming model
// passes the reply piece by piece to [Request].OnDelta, and the Agent to
// OnEvent as [EventDelta]. A test of code built on the agent gives it a
// [Model] of its own: one method that answers each Request.
//
// Quick start (toolsift.Open connects the servers of a config and indexes
// their tools; the Toolset is the agent's Tools):
//
//	ts, err := toolsift.Open(ctx, "mcp.json", nil)
//	if err != nil { ... }
//	defer ts.Close()
//	model, err := openaimodel.NewChat("gpt-4o-mini", &openaimodel.ChatOptions{Stream: true}) // OPENAI_API_KEY, OPENAI_BASE_URL
//	if err != nil { ... }
//	a, err := agent.New(model, ts, nil)
//	if err != nil { ... }
//	res, err := a.Run(ctx, "What is the weather in Bern?")
//	// res.Answer, res.Steps[i].Offered, res.ToolTokens vs res.AllToolsTokens
//	res, err = a.Continue(ctx, res, "And tomorrow?")
package agent

// Package agent is a ReAct agent that picks its tools afresh at every step,
// so it stays accurate with thousands of tools.
//
// Each step of Agent.Run is Think → Act → Observe:
//
//   - Think: the conversation's state (the user's latest message, the
//     model's latest message and tool calls, the last tool results, the
//     tools used so far) becomes a retrieval.Query; the Retriever ranks the
//     catalog; budget.Select fits the best tools, compressing schemas if need
//     be, into Options.ToolBudget tokens; the model is called with exactly
//     those tools, in a stable order (by name, search_tools last).
//   - Act: the model's tool calls run through the Caller (an mcp.Hub),
//     several at once (Options.MaxParallel), each bounded by
//     Options.ToolTimeout.
//   - Observe: each result, cut to Options.ObservationBudget tokens, goes
//     back as a tool message. The loop ends when the model answers without
//     tool calls, after Options.MaxSteps steps (ErrMaxSteps), or when ctx
//     ends; the Result always holds the transcript so far.
//
// Nothing the model does wrong crashes a run: a call to a tool it was not
// offered runs anyway when the catalog has it (and the tool stays offered,
// "sticky"); a tool name that does not exist is answered with the closest
// tools, which join the next step; arguments that are not a JSON object, a
// failing tool and a tool that hangs become error observations. When the
// whole catalog does not fit the budget, the model also gets search_tools
// (retrieval.SearchTool) to ask for tools by description; what it finds
// joins the next step.
//
// Every step is traced: Result.Steps (query, tools offered with their
// tokens and tier, the provider's usage, calls with outcomes and sizes,
// latency per phase, and the cost of offering every tool instead), an Event
// per phase to Options.OnEvent, and a log/slog record per event.
//
// The chat model is an interface; NewOpenAI implements it with openai-go
// for OpenAI and any compatible server (vLLM, Ollama, llama.cpp, LiteLLM),
// streaming or not. Package agenttest has a scripted Chat Completions
// server for tests.
//
// Quick start:
//
//	hub, _ := mcp.NewHub(cfg, nil) // cfg from mcp.LoadConfig("mcp.json")
//	defer hub.Close()
//	_ = hub.Connect(ctx)
//	emb, _ := toolindex.NewLocalEmbedder(nil)
//	ix, _ := toolindex.New(emb, nil)
//	_, _ = ix.Upsert(ctx, hub.Tools()...)
//	ret, _ := retrieval.New(ix, nil)
//
//	model, _ := agent.NewOpenAI("gpt-4o-mini", &agent.OpenAIOptions{Stream: true}) // OPENAI_API_KEY, OPENAI_BASE_URL
//	a, _ := agent.New(model, agent.Tools{Catalog: ix, Retriever: ret, Caller: hub},
//		&agent.Options{ToolBudget: 2000})
//	res, err := a.Run(ctx, "What is the weather in Bern?")
//	// res.Answer, res.Steps[i].Offered, res.ToolTokens vs res.AllToolsTokens
//	res, err = a.Continue(ctx, res, "And tomorrow?")
package agent

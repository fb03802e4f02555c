// Package think is toolsift's Think step: for one step of an agent, rank
// the catalog (retrieval), fit the best tools into a token budget (budget),
// add the search_tools meta-tool when tools are left out, and order the
// request so that the same set always makes the same request.
//
// It is written once and used by the agent, `toolbench eval` and the
// benchmarks, so the numbers toolbench prints are what the agent sends, and
// its defaults (DefaultBudget, DefaultK, DefaultPack) are the library's
// and the CLI's. By default the budget is packed: the K best tools and
// the DefaultPack ranked after them compete for it, the ones past K at a
// cheaper tier when the best are large, so more of the likely tools are
// sent, never over the budget (Options.NoPack turns it off).
//
// Across the steps of one run, the tool list is kept cache-stable by
// default (PolicyStable): providers bill a repeated prompt prefix (tools
// first, then messages) at a fraction of the price, so the tools offered
// at the previous step (Request.Previous) keep their place and bytes, new
// ones are appended, and a tool is evicted only when it changed, left the
// catalog, overflows the budget, or when keeping it for the steps to come
// costs more, under Options.Prices, than re-billing the prompt after it
// (Offer.Evicted says which and why). PolicyFresh chooses afresh at every
// step. docs/measurements.md ("Prompt cache") compares both on scripted
// traces.
//
// The step owns the search_tools meta-tool it offers: its name
// (SearchToolName), its definition (SearchTool), the one rule for its
// arguments (ParseSearchArgs) and both its answers. Thinker.SearchTools
// names the tools found, with a line each, for a loop that offers them at
// its next step (Request.Found); Thinker.Find brings the found tools'
// schemas fitted to a budget, by the same rules as a step (budget.Select,
// a found tool clearly wanted even when larger than the budget), for a
// client with no Think step of its own (a proxy's). Both rank with retrieval's Search.
// ConversationQuery is the one rule that turns a conversation
// (tool.Message) into the Query of its next step.
//
// Most programs do not use it directly: toolsift.Open returns a Toolset
// whose Think method is this step over the servers of a config file.
package think

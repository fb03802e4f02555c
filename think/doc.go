// Package think is toolsift's Think step: for one step of an agent, rank
// the catalog (retrieval), fit the best tools into a token budget (budget),
// add the search_tools meta-tool when tools are left out, and order the
// request so that the same set always makes the same request.
//
// It is written once and used by the agent, `toolbench eval` and the
// benchmarks, so the numbers toolbench prints are what the agent sends, and
// its defaults (DefaultBudget, DefaultK) are the library's
// and the CLI's.
//
// Most programs do not use it directly: toolsift.Open returns a Toolset
// whose Think method is this step over the servers of a config file.
package think

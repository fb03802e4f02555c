package retrieval_test

import (
	"context"
	"testing"

	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/tool"
)

// TestNamedToolFirst: a request that names a tool, by its name, its
// upstream name or a prefixed form, gets that tool first in every mode and
// in Search, whatever the other words of the request favour.
func TestNamedToolFirst(t *testing.T) {
	tools := []tool.Tool{
		{Name: "codex__ask_codex", OriginalName: "ask_codex", Server: "codex", Description: "Ask the Codex agent a question about code"},
		{Name: "everything__get-sum", OriginalName: "get-sum", Server: "everything", Description: "Returns the sum of two numbers"},
		{Name: "everything__echo", OriginalName: "echo", Server: "everything", Description: "Echoes back the input string"},
		{Name: "memory__add_observations", OriginalName: "add_observations", Server: "memory", Description: "Add new observations to existing entities in the knowledge graph"},
		{Name: "memory__read_graph", OriginalName: "read_graph", Server: "memory", Description: "Read the entire knowledge graph"},
		{Name: "files__list", OriginalName: "list", Server: "files", Description: "List the files of a folder"},
		{Name: "weather__get_forecast", OriginalName: "get_forecast", Server: "weather", Description: "Weather forecast for a city"},
	}
	ix := testenv.Index(t, nil, nil, tools...)
	ctx := context.Background()
	cases := []struct{ task, want string }{
		{"ask_codex: why does the knowledge graph add observations twice?", "codex__ask_codex"},
		{"call mcp__codex__ask_codex about the graph observations", "codex__ask_codex"},
		{"codex__ask_codex please, about adding observations", "codex__ask_codex"},
		{"use codex.ask_codex to read the knowledge graph", "codex__ask_codex"},
		{"try codex/ask_codex on the forecast code", "codex__ask_codex"},
		{"Use the get-sum tool to add observations 17 and 25.", "everything__get-sum"},
		{"EVERYTHING__GET-SUM of 2 and 3, then add observations", "everything__get-sum"},
		{"run the echo tool on the knowledge graph text", "everything__echo"},
		{"run `echo` with 'read the graph'", "everything__echo"},
		{"readGraph? no: get_forecast for Lisbon, read the knowledge graph later", "weather__get_forecast"},
	}
	for _, mode := range []retrieval.Mode{retrieval.Hybrid, retrieval.Lexical, retrieval.Vector} {
		r := newRetriever(t, ix, &retrieval.Options{Mode: mode, K: 3})
		for _, c := range cases {
			ms, err := r.Retrieve(ctx, retrieval.Query{Task: c.task})
			if err != nil {
				t.Fatal(err)
			}
			if len(ms) == 0 || ms[0].Tool.Name != c.want || ms[0].Score != 1 {
				t.Errorf("%v: %q: %v; want %s first, score 1", mode, c.task, names(ms), c.want)
			}
			found, err := r.Search(ctx, c.task, 3)
			if err != nil {
				t.Fatal(err)
			}
			if len(found) == 0 || found[0].Tool.Name != c.want {
				t.Errorf("%v: Search %q: %v; want %s first", mode, c.task, names(found), c.want)
			}
		}
	}
	// A plain word that happens to be a tool's name does not name it; nor
	// does a name of another server, or a file name.
	r := newRetriever(t, ix, &retrieval.Options{Mode: retrieval.Lexical, K: 3})
	for _, task := range []string{
		"list what you know: read the knowledge graph",
		"weather.echo: read the knowledge graph",
		"read the knowledge graph from graph.json",
	} {
		ms, err := r.Retrieve(ctx, retrieval.Query{Task: task})
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) == 0 || ms[0].Tool.Name != "memory__read_graph" {
			t.Errorf("%q: %v; want memory__read_graph first (no tool named)", task, names(ms))
		}
	}
	// Servers restricts named tools too.
	only := newRetriever(t, ix, &retrieval.Options{Mode: retrieval.Lexical, K: 3, Servers: []string{"memory"}})
	ms, err := only.Retrieve(ctx, retrieval.Query{Task: "ask_codex to read the knowledge graph"})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Tool.Server != "memory" {
			t.Errorf("Servers [memory]: got %s", m.Tool.Name)
		}
	}
}

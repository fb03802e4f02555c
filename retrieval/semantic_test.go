package retrieval_test

import (
	"context"
	"encoding/json"
	"math"
	"sync"
	"testing"

	"github.com/toolsift/toolsift/encoder"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/toolindex"
)

var (
	useOnce sync.Once
	useEnc  *encoder.USE
	useErr  error
)

// semanticIndex indexes tools with the local embedder and, as its semantic
// signal, the built-in Universal Sentence Encoder.
func semanticIndex(t *testing.T, tools ...tool.Tool) *toolindex.Index {
	t.Helper()
	useOnce.Do(func() { useEnc, useErr = encoder.NewUSE(nil) })
	if useErr != nil {
		t.Fatal(useErr)
	}
	local, err := toolindex.NewLocalEmbedder(nil)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := toolindex.New(local, &toolindex.Options{Semantic: useEnc})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Upsert(context.Background(), tools...); err != nil {
		t.Fatal(err)
	}
	return ix
}

// everything is a catalog like the reference "everything" server's, where
// the words of "add 2 and 3" appear in no tool but the meaning is in one.
var everything = []tool.Tool{
	{Name: "get-sum", Description: "Returns the sum of two numbers", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number","description":"First number"},"b":{"type":"number","description":"Second number"}}}`)},
	{Name: "echo", Description: "Echoes back the input", InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string","description":"Message to echo"}}}`)},
	{Name: "get-tiny-image", Description: "Returns a tiny MCP logo image"},
	{Name: "trigger-long-running-operation", Description: "Demonstrates a long running operation with progress updates", InputSchema: json.RawMessage(`{"type":"object","properties":{"duration":{"type":"number"},"steps":{"type":"number"}}}`)},
	{Name: "get-env", Description: "Returns all environment variables, helpful for debugging MCP server configuration"},
	{Name: "get-annotated-message", Description: "Demonstrates how annotations can be used to provide metadata about content", InputSchema: json.RawMessage(`{"type":"object","properties":{"messageType":{"type":"string","enum":["error","success","debug"]}}}`)},
	{Name: "read_graph", Description: "Read the entire knowledge graph"},
	{Name: "create_entities", Description: "Create multiple new entities in the knowledge graph"},
	{Name: "read_text_file", Description: "Read the complete contents of a file from the file system as text."},
	{Name: "list_directory", Description: "Get a detailed listing of all files and directories in a specified path."},
}

// TestSemanticFindsParaphrase: a request in other words than the tool's
// is ranked first in hybrid mode thanks to the semantic signal, where the
// words alone find nothing.
func TestSemanticFindsParaphrase(t *testing.T) {
	ix := semanticIndex(t, everything...)
	ctx := context.Background()
	q := retrieval.Query{Task: "add 2 and 3"}
	for _, c := range []struct {
		mode retrieval.Mode
		top  bool // get-sum must be first
	}{
		{retrieval.Hybrid, true},
		{retrieval.Semantic, true},
	} {
		r := newRetriever(t, ix, &retrieval.Options{Mode: c.mode, K: 3})
		ms, err := r.Retrieve(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) == 0 || ms[0].Tool.Name != "get-sum" || ms[0].Score <= 0 {
			t.Errorf("%v: %v; want get-sum first with a score above 0", c.mode, names(ms))
		}
	}
	lex := newRetriever(t, ix, &retrieval.Options{Mode: retrieval.Lexical, K: 3})
	ms, err := lex.Retrieve(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Tool.Name == "get-sum" {
			t.Fatalf("lexical found get-sum for %q: the test no longer shows what the semantic signal adds", q.Task)
		}
	}
}

// TestHybridScores: Score is in [0, 1], 1 for a tool first in every list,
// and about one half for the best match of a query that only the vector
// signals answer (no tool has its words).
func TestHybridScores(t *testing.T) {
	ix := semanticIndex(t, everything...)
	ctx := context.Background()
	r := newRetriever(t, ix, &retrieval.Options{K: 10})
	ms, err := r.Retrieve(ctx, retrieval.Query{Task: "Read the entire knowledge graph"})
	if err != nil {
		t.Fatal(err)
	}
	if ms[0].Tool.Name != "read_graph" || math.Abs(ms[0].Score-1) > 1e-9 {
		t.Fatalf("exact request: %s %.3f first; want read_graph at 1", ms[0].Tool.Name, ms[0].Score)
	}
	for i, m := range ms {
		if m.Score < 0 || m.Score > 1 || (i > 0 && m.Score > ms[i-1].Score) {
			t.Fatalf("scores not in [0, 1] and descending: %v", ms)
		}
	}
	ms, err = r.Retrieve(ctx, retrieval.Query{Task: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 || ms[0].Score < 0.2 || ms[0].Score > 0.7 {
		t.Fatalf("hello: %v; want the best near one half", ms)
	}
}

package think_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolsift/toolsift/internal/dataset"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
)

// searchCatalog is a Thinker over the retrieval package's test catalog
// (testdata/tools.jsonl there) with the local embedder, ranking as ro says.
func searchCatalog(t *testing.T, ro retrieval.Options, extra ...tool.Tool) *think.Thinker {
	t.Helper()
	tools, err := dataset.LoadTools("../retrieval/testdata/tools.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	return newThinker(t, testenv.Index(t, nil, nil, append(tools, extra...)...), think.Options{Retrieval: ro})
}

func matchNames(ms []retrieval.Match) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Tool.Name
	}
	return out
}

func TestSearchToolDefinition(t *testing.T) {
	def := think.SearchTool()
	if def.Name != think.SearchToolName || def.Description == "" || def.Hash != tool.ContentHash(def) {
		t.Errorf("SearchTool() = %+v: want name %q, a description and its hash", def, think.SearchToolName)
	}
	var schema struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(def.InputSchema, &schema); err != nil {
		t.Fatalf("input schema: %v", err)
	}
	var props []string
	for p := range schema.Properties {
		props = append(props, p)
	}
	if schema.Type != "object" || len(props) != 2 || schema.Properties["query"] == nil || schema.Properties["k"] == nil {
		t.Errorf("schema = %s, want an object with query and k", def.InputSchema)
	}
	if diff := cmp.Diff([]string{"query"}, schema.Required); diff != "" {
		t.Errorf("required mismatch (-want +got):\n%s", diff)
	}
}

func TestSearchTools(t *testing.T) {
	// search_tools itself may be in the index: it must never find itself.
	r := searchCatalog(t, retrieval.Options{Pinned: []string{"web__search"}}, think.SearchTool())
	text, ms, err := r.SearchTools(context.Background(), json.RawMessage(`{"query":"search tools to send an email","k":2}`))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Tools []struct{ Name, Description string } `json:"tools"`
	}
	if err := json.Unmarshal([]byte(text), &got); err != nil {
		t.Fatalf("answer %q is not JSON: %v", text, err)
	}
	if len(got.Tools) != 2 || got.Tools[0].Name != "mail__send_email" {
		t.Fatalf("answer = %s, want 2 tools, mail__send_email first", text)
	}
	if got.Tools[0].Description != "Send an email message to one or more recipients." {
		t.Errorf("description = %q", got.Tools[0].Description)
	}
	if diff := cmp.Diff([]string{got.Tools[0].Name, got.Tools[1].Name}, matchNames(ms)); diff != "" {
		t.Errorf("matches differ from the answer (-answer +matches):\n%s", diff)
	}
	for _, m := range ms {
		if m.Tool.Name == think.SearchToolName {
			t.Errorf("search_tools found itself")
		}
	}

	// Default k is 5.
	_, ms, err = r.SearchTools(context.Background(), json.RawMessage(`{"query":"file"}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 5 {
		t.Errorf("default k: got %d matches, want 5", len(ms))
	}
	// Nothing found is an empty list, not an error.
	r = searchCatalog(t, retrieval.Options{Mode: retrieval.Lexical}, think.SearchTool())
	text, ms, err = r.SearchTools(context.Background(), json.RawMessage(`{"query":"zzzz qqqq"}`))
	if err != nil || text != `{"tools":[]}` || len(ms) != 0 {
		t.Errorf("no match: got %q, %d matches, %v; want {\"tools\":[]}", text, len(ms), err)
	}
}

func TestSearchToolsBadArgs(t *testing.T) {
	r := searchCatalog(t, retrieval.Options{})
	for _, args := range []string{``, `[]`, `{"query":""}`, `{"query":"  "}`, `{"query":"x","k":-1}`, `{"query":"x","k":21}`, `{"query":3}`} {
		t.Run(args, func(t *testing.T) {
			_, _, err := r.SearchTools(context.Background(), json.RawMessage(args))
			if !errors.Is(err, think.ErrSearchArgs) {
				t.Errorf("SearchTools(%s): err = %v, want ErrSearchArgs", args, err)
			}
		})
	}
}

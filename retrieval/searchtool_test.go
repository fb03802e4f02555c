package retrieval_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolsift/toolsift/internal/dataset"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/tool"
)

func TestSearchToolDefinition(t *testing.T) {
	def := retrieval.SearchTool()
	if def.Name != retrieval.SearchToolName || def.Description == "" || def.Hash != tool.ContentHash(def) {
		t.Errorf("SearchTool() = %+v: want name %q, a description and its hash", def, retrieval.SearchToolName)
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
	ix := newIndex(t)
	// search_tools itself may be in the index: it must never find itself.
	if _, err := ix.Upsert(context.Background(), retrieval.SearchTool()); err != nil {
		t.Fatal(err)
	}
	r := newRetriever(t, ix, &retrieval.Options{Pinned: []string{"web__search"}})
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
	if diff := cmp.Diff([]string{got.Tools[0].Name, got.Tools[1].Name}, names(ms)); diff != "" {
		t.Errorf("matches differ from the answer (-answer +matches):\n%s", diff)
	}
	for _, m := range ms {
		if m.Tool.Name == retrieval.SearchToolName {
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
	r = newRetriever(t, ix, &retrieval.Options{Mode: retrieval.Lexical})
	text, ms, err = r.SearchTools(context.Background(), json.RawMessage(`{"query":"zzzz qqqq"}`))
	if err != nil || text != `{"tools":[]}` || len(ms) != 0 {
		t.Errorf("no match: got %q, %d matches, %v; want {\"tools\":[]}", text, len(ms), err)
	}
}

func TestSearchToolsBadArgs(t *testing.T) {
	r := newRetriever(t, newIndex(t), nil)
	for _, args := range []string{``, `[]`, `{"query":""}`, `{"query":"  "}`, `{"query":"x","k":-1}`, `{"query":"x","k":21}`, `{"query":3}`} {
		t.Run(args, func(t *testing.T) {
			_, _, err := r.SearchTools(context.Background(), json.RawMessage(args))
			if !errors.Is(err, retrieval.ErrSearchArgs) {
				t.Errorf("SearchTools(%s): err = %v, want ErrSearchArgs", args, err)
			}
		})
	}
}

// TestSearchWithin: the tools outside in are not ranked at all: with the
// vector signal alone (no corpus statistics), the matches and their scores
// are those of an index that never had them; in the default mode none is
// found, even named, and k others take their places.
func TestSearchWithin(t *testing.T) {
	tools, err := dataset.LoadTools("testdata/tools.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	notMail := func(tl tool.Tool) bool { return tl.Server != "mail" }
	var without []tool.Tool
	for _, tl := range tools {
		if notMail(tl) {
			without = append(without, tl)
		}
	}
	if len(without) == len(tools) {
		t.Fatal("testdata has no mail server")
	}
	ctx := context.Background()
	const q = "send an email to alice"
	opts := &retrieval.Options{Mode: retrieval.Vector}
	got, err := newRetriever(t, testenv.Index(t, nil, nil, tools...), opts).SearchWithin(ctx, q, 5, notMail)
	if err != nil {
		t.Fatal(err)
	}
	want, err := newRetriever(t, testenv.Index(t, nil, nil, without...), opts).Search(ctx, q, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 {
		t.Fatalf("SearchWithin found %d, want 5", len(got))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SearchWithin over every tool differs from Search over an index without mail's (-without +within):\n%s", diff)
	}

	r := newRetriever(t, testenv.Index(t, nil, nil, tools...), nil)
	for _, q := range []string{q, "mail__send_email", "send_email"} {
		all, err := r.Search(ctx, q, 5)
		if err != nil {
			t.Fatal(err)
		}
		if len(all) == 0 || all[0].Tool.Server != "mail" {
			t.Fatalf("Search(%q) = %v: want mail's tool first (the test's premise)", q, names(all))
		}
		within, err := r.SearchWithin(ctx, q, 5, notMail)
		if err != nil {
			t.Fatal(err)
		}
		if len(within) != 5 || slices.ContainsFunc(within, func(m retrieval.Match) bool { return !notMail(m.Tool) }) {
			t.Errorf("SearchWithin(%q) = %v: want 5 tools, none of mail's", q, names(within))
		}
	}
}

package retrieval_test

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolsift/toolsift/internal/dataset"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/tool"
)

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

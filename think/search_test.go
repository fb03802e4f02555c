package think_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/think"
)

// TestFind: search_tools' fitted answer ranks, fits the budget by
// compressing before leaving out, names what it left out, and sends the
// best tool alone when nothing fits (a found tool is clearly wanted).
func TestFind(t *testing.T) {
	th := newThinker(t, newIndex(t, catalog...), think.Options{Retrieval: retrieval.Options{Mode: retrieval.Lexical}})
	ctx := context.Background()

	ans, found, err := th.Find(ctx, "weather forecast", 2, 4000, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ans.Tools) != 2 || len(found) != 2 || ans.Tools[0].Name != found[0].Name || len(ans.Omitted) != 0 || ans.Tokens <= 0 {
		t.Fatalf("budget 4000: %+v, %d found; want 2 tools, none omitted", ans, len(found))
	}
	if !slices.IsSortedFunc(ans.Tools, func(a, b think.FoundTool) int { return int((b.Score - a.Score) * 1e6) }) {
		t.Errorf("tools not best first: %+v", ans.Tools)
	}
	for _, f := range ans.Tools {
		if f.Tier != "full" || !json.Valid(f.InputSchema) {
			t.Errorf("budget 4000: %s at tier %q, schema %s", f.Name, f.Tier, f.InputSchema)
		}
	}
	best, second := ans.Tools[0].Name, ans.Tools[1].Name

	// Not even the best tool fits: it is sent anyway, the others omitted.
	ans, found, err = th.Find(ctx, "weather forecast", 2, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ans.Tools) != 1 || ans.Tools[0].Name != best || len(found) != 1 || len(ans.Omitted) != 1 || ans.Tokens <= 1 {
		t.Errorf("budget 1: %+v; want %s alone beyond the budget, one omitted", ans, best)
	}

	// A skipped tool is passed over as if absent: the other is found alone.
	ans, found, err = th.Find(ctx, "weather forecast", 2, 4000, func(name string) bool { return name == best })
	if err != nil {
		t.Fatal(err)
	}
	if len(ans.Tools) != 1 || len(found) != 1 || ans.Tools[0].Name != second {
		t.Errorf("skipping %s: %+v; want %s alone", best, ans.Tools, second)
	}

	// No match is an empty list, not null.
	ans, _, err = th.Find(ctx, "zzzz qqqq", 3, 0, nil)
	if b, _ := json.Marshal(ans); err != nil || string(b) != `{"tools":[],"tokens":0,"listed":false}` {
		t.Errorf("no match: %s, %v", b, err)
	}
	if _, _, err := th.Find(ctx, " ", 3, 0, nil); !errors.Is(err, retrieval.ErrSearch) {
		t.Errorf("empty query: err = %v, want ErrSearch", err)
	}
}

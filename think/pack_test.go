package think_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolsift/toolsift/budget"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
)

// With Pack, more ranked tools compete for the budget and the ranking
// itself does not move: when the best tools are large, more of the next
// ones fit, compressed, and the request stays within the budget.
func TestPack(t *testing.T) {
	var tools []tool.Tool
	props := `{"type":"object","properties":{`
	for i := range 30 {
		if i > 0 {
			props += ","
		}
		props += fmt.Sprintf(`"field%d":{"type":"string","description":"The report's field number %d, as the ledger names it."}`, i, i)
	}
	props += `}}`
	for i := range 3 {
		tools = append(tools, tool.Tool{Name: fmt.Sprintf("report_%d", i),
			Description: "Build the quarterly report from the ledger. " + strings.Repeat("It checks every field. ", 20),
			InputSchema: json.RawMessage(props)}.WithHash())
	}
	for i := range 12 {
		tools = append(tools, mk(fmt.Sprintf("ledger_tool_%02d", i), fmt.Sprintf("Read ledger entry kind %d for the report.", i)))
	}
	ix := newIndex(t, tools...)
	req := think.Request{Query: retrieval.Query{Task: "build the quarterly report from the ledger"}}
	step := func(pack int) think.Offer {
		th := newThinker(t, ix, think.Options{Budget: 700, Search: think.SearchNever, Pack: pack, NoPack: pack == 0,
			Retrieval: retrieval.Options{K: 3, Mode: retrieval.Lexical}})
		off, err := th.Think(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if off.Tokens > 700 {
			t.Errorf("pack %d: %d tokens over the budget of 700", pack, off.Tokens)
		}
		return off
	}
	plain, packed := step(0), step(6)
	if len(plain.Ranked) != 3 || len(packed.Ranked) != 9 {
		t.Fatalf("ranked %d and %d tools, want 3 and 9", len(plain.Ranked), len(packed.Ranked))
	}
	var a, b []string
	for i := range 3 {
		a = append(a, plain.Ranked[i].Tool.Name)
		b = append(b, packed.Ranked[i].Tool.Name)
		if plain.Ranked[i].Score != packed.Ranked[i].Score {
			t.Errorf("rank %d scores %v without Pack, %v with", i+1, plain.Ranked[i].Score, packed.Ranked[i].Score)
		}
	}
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("Pack moved the ranking (-without +with):\n%s", diff)
	}
	if len(packed.Tools) <= len(plain.Tools) {
		t.Errorf("Pack offered %d tools, no more than the %d without it", len(packed.Tools), len(plain.Tools))
	}
	if _, err := think.New(ix, &think.Options{Pack: -1}); err == nil {
		t.Error("Pack -1 accepted")
	}
	// The default packs DefaultPack more; NoPack turns it off.
	th := newThinker(t, ix, think.Options{Budget: 700, Search: think.SearchNever,
		Retrieval: retrieval.Options{K: 3, Mode: retrieval.Lexical}})
	if got := th.Options().Pack; got != think.DefaultPack {
		t.Errorf("default Pack = %d, want %d", got, think.DefaultPack)
	}
	def, err := th.Think(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if want := min(3+think.DefaultPack, len(tools)); len(def.Ranked) != want {
		t.Errorf("default ranked %d tools, want %d", len(def.Ranked), want)
	}
	if got := newThinker(t, ix, think.Options{NoPack: true, Pack: 6}).Options().Pack; got != 0 {
		t.Errorf("NoPack with Pack 6: Pack = %d, want 0", got)
	}
}

// A packed step whose K+Pack candidates leave budget over fills it with
// the tools ranked after them (as deep as the ranking goes): no tool the
// selection holds changes tier or goes, the ranking does not move, and the
// request stays within the budget. Before, a step stopped at K+Pack tools
// (50 by default) on a catalog of small tools.
func TestPackFills(t *testing.T) {
	var tools []tool.Tool
	for i := range 40 {
		tools = append(tools, mk(fmt.Sprintf("ledger_tool_%02d", i), fmt.Sprintf("Read ledger entry kind %d for the report.", i)))
	}
	ix := newIndex(t, tools...)
	req := think.Request{Query: retrieval.Query{Task: "read the ledger entries for the report"}}
	o := think.Options{Budget: 1500, Search: think.SearchNever, Pack: 6, Retrieval: retrieval.Options{K: 4, Mode: retrieval.Lexical, Depth: 30}}
	th := newThinker(t, ix, o)
	off, err := th.Think(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(off.Ranked) != 10 {
		t.Errorf("ranked %d tools, want K+Pack = 10", len(off.Ranked))
	}
	if off.Tokens > 1500 {
		t.Errorf("%d tokens, over the budget of 1500", off.Tokens)
	}
	if n := len(off.Names()); n <= 10 || n > 30 {
		t.Errorf("offered %d tools, want more than the 10 that competed and at most the ranking's depth of 30", n)
	}
	// The tools that competed are all offered at full tier, as without
	// the fill: the budget holds them all.
	full := map[string]bool{}
	for _, s := range off.Tools {
		full[s.Tool.Name] = s.Tier == budget.TierFull
	}
	for _, m := range off.Ranked {
		if !full[m.Tool.Name] {
			t.Errorf("%s competed but is not offered at full tier", m.Tool.Name)
		}
	}
	// Without packing, only K compete and nothing fills.
	o.NoPack = true
	plain, err := newThinker(t, ix, o).Think(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(plain.Names()); n != 4 {
		t.Errorf("NoPack: offered %d tools, want K = 4", n)
	}
	// The request order is the one rule's: by name.
	if !slices.IsSortedFunc(off.Names(), strings.Compare) {
		t.Errorf("offered out of name order: %v", off.Names())
	}
}

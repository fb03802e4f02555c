package think_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

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

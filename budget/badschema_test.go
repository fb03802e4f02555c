package budget_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolsift/toolsift/budget"
	"github.com/toolsift/toolsift/tool"
)

// badSchemas are input schemas a server may list that must never reach the
// model.
var badSchemas = []string{`42`, `"string"`, `[1,2]`, `null`, `false`, `{"type":"string"}`, `{"type":["object","null"]}`, `{"type":`, `{} {}`}

func TestRenderNeverSendsANonObjectSchema(t *testing.T) {
	tok := mustTokenizer(t, "o200k_base")
	for _, schema := range badSchemas {
		for tier := range budget.Tier(budget.NumTiers) {
			r, err := tok.CountTool(tool.Tool{Name: "bad", InputSchema: json.RawMessage(schema)}, tier)
			if !errors.Is(err, budget.ErrBadTool) || !strings.Contains(err.Error(), `"bad"`) {
				t.Errorf("schema %s, tier %s: got %s, %v; want ErrBadTool naming the tool", schema, tier, r.Parameters, err)
			}
		}
	}
	// Repaired: the type an object schema left out; true means any object.
	for schema, want := range map[string]string{
		`{"properties":{"q":{"type":"string"}}}`: `{"properties":{"q":{"type":"string"}},"type":"object"}`,
		`{}`:                                     `{"type":"object"}`,
		`true`:                                   `{"properties":{},"type":"object"}`,
	} {
		r, err := tok.CountTool(tool.Tool{Name: "fixable", InputSchema: json.RawMessage(schema)}, budget.TierFull)
		if err != nil || string(r.Parameters) != want {
			t.Errorf("schema %s: got %s, %v; want %s", schema, r.Parameters, err, want)
		}
	}
}

func TestSelectSkipsBadTools(t *testing.T) {
	tok := mustTokenizer(t, "o200k_base")
	good := exampleTool()
	cands := []budget.Candidate{{Tool: good, Score: 0.5}}
	var wantSkipped []string
	for i, schema := range badSchemas {
		name := "bad" + string(rune('a'+i))
		wantSkipped = append(wantSkipped, name)
		// Best-scored and pinned: still skipped, never sent.
		cands = append(cands, budget.Candidate{Tool: tool.Tool{Name: name, InputSchema: json.RawMessage(schema)}, Score: 1, Pinned: i == 0})
	}
	sel, err := budget.Select(tok, cands, budget.Budget{Tokens: 4000, MinTools: 1})
	if err != nil {
		t.Fatalf("Select: %v", err)
	}
	var got []string
	for _, s := range sel.Tools {
		got = append(got, s.Tool.Name)
	}
	if diff := cmp.Diff([]string{good.Name}, got); diff != "" {
		t.Errorf("selected (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantSkipped, sel.Skipped); diff != "" {
		t.Errorf("Skipped (-want +got):\n%s", diff)
	}
	// Only bad tools: an empty selection, not an error.
	sel, err = budget.Select(tok, cands[1:], budget.Budget{Tokens: 4000})
	if err != nil || len(sel.Tools) != 0 || len(sel.Skipped) != len(badSchemas) {
		t.Errorf("only bad tools: %+v, %v", sel, err)
	}
}

// FuzzRender renders arbitrary schemas at every tier: it must never panic,
// and what it renders is an object schema.
func FuzzRender(f *testing.F) {
	for _, s := range append(badSchemas, `{"type":"object","properties":{"a":{"type":"string","description":"x"}},"required":["a"]}`,
		`{"properties":{"description":{"type":"object","properties":{"title":{}}}},"$defs":{"x":{"anyOf":[{"type":"null"},true]}}}`,
		`{"type":"object","$schema":"http://json-schema.org/draft-07/schema#","items":[{}],"additionalItems":false}`) {
		f.Add("A tool. It does things.", s)
	}
	tok := mustTokenizer(f, "o200k_base")
	f.Fuzz(func(t *testing.T, desc, schema string) {
		for tier := range budget.Tier(budget.NumTiers) {
			r, err := tok.CountTool(tool.Tool{Name: "fuzz", Description: desc, InputSchema: json.RawMessage(schema)}, tier)
			if err != nil {
				if !errors.Is(err, budget.ErrBadTool) {
					t.Fatalf("error %v does not wrap ErrBadTool", err)
				}
				continue
			}
			var root map[string]any
			if err := json.Unmarshal(r.Parameters, &root); err != nil || root["type"] != "object" {
				t.Fatalf("tier %s: parameters %s are not an object schema (%v)", tier, r.Parameters, err)
			}
			if r.Tokens <= 0 {
				t.Fatalf("tier %s: %d tokens", tier, r.Tokens)
			}
		}
	})
}

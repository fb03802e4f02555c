package gateway

import (
	"encoding/json"
	"math"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolsift/toolsift/think"
)

// answerCases are search_tools answers with what the JSON and the escaping
// must get right: texts to escape (control characters, bidi overrides,
// invalid UTF-8, HTML's characters), schemas with descriptions to escape,
// empty fields, scores of every form json writes.
func answerCases() []think.SearchAnswer {
	schema := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","description":"the <query> & more \u001b[31m red"}},"required":["q"]}`)
	plain := json.RawMessage(` { "type" : "object" } `)
	tools := []think.FoundTool{
		{Name: "a__one", Server: "a", Score: 1, Title: "One", Description: "Finds <things> & \x1b[2J stuff \u202e.", InputSchema: schema, Tier: "full"},
		{Name: "a__two", Score: 0.123, InputSchema: plain, Tier: "minimal"},
		{Name: "b__three", Server: "b", Score: 0, Description: "bad \xff utf-8", InputSchema: schema, Tier: "no-param-docs"},
		{Name: "b__four", Server: "b", Score: 1e-7, Title: "Ünïcødé", InputSchema: plain, Tier: "short-description"},
		{Name: "b__five", Server: "b", Score: 0.5, Description: "line\nbreak\ttab", InputSchema: schema, Tier: "full"},
	}
	return []think.SearchAnswer{
		{Tools: []think.FoundTool{}},
		{Tools: tools[:1], Tokens: 120, Listed: true},
		{Tools: tools, Omitted: []string{"c__x", "c__<y>"}, Tokens: 4321},
		{Tools: tools[2:], Tokens: 7, Listed: true},
		{Tools: []think.FoundTool{}, Incomplete: think.NewIncomplete([]string{"slow", "s<l>ow"}, []string{"broken"})},
		{Tools: tools[:2], Tokens: 9, Incomplete: think.NewIncomplete(nil, []string{"broken"})},
	}
}

// answerJSON writes what json.Marshal writes of the answer with its texts
// made safe (the way every answer was written before), the first time and
// from what it keeps, and renders a tool anew when its definition changed.
func TestAnswerJSONIsMarshal(t *testing.T) {
	p := &proxy{}
	want := func(ans think.SearchAnswer) string {
		ans.Tools = slices.Clone(ans.Tools)
		for i := range ans.Tools {
			tl := &ans.Tools[i]
			tl.Title, tl.Description, tl.InputSchema = text(tl.Title), text(tl.Description), schemaText(tl.InputSchema)
		}
		b, err := json.Marshal(ans)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	check := func(ans think.SearchAnswer) {
		t.Helper()
		for round := range 2 {
			got, err := p.answerJSON(ans)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want(ans), string(got)); diff != "" {
				t.Errorf("round %d (-want +got):\n%s", round, diff)
			}
		}
	}
	for _, ans := range answerCases() {
		check(ans)
	}
	// The same name and tier, another description (the tool changed
	// upstream): not the kept rendering.
	ans := answerCases()[2]
	ans.Tools[0].Description = "Changed."
	ans.Tools[0].Score = 0.75
	check(ans)
	// A score json cannot write is json.Marshal's error.
	ans.Tools[1].Score = math.NaN()
	if _, err := p.answerJSON(ans); err == nil {
		t.Error("a NaN score: no error")
	}
}

// BenchmarkAnswerJSON is a search_tools answer of five tools written as
// JSON: from the kept renderings (answerJSON), and with every text escaped
// and the whole answer marshalled (marshalSafe, as before).
func BenchmarkAnswerJSON(b *testing.B) {
	ans := answerCases()[2]
	b.Run("kept", func(b *testing.B) {
		p := &proxy{}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.answerJSON(ans); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := marshalSafe(ans); err != nil {
				b.Fatal(err)
			}
		}
	})
}

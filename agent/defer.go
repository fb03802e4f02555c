package agent

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"

	"github.com/toolsift/toolsift/budget"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
)

// Options.MaxDeferredTokens' default, 50,000 tokens of a catalog's tools
// at full tier (as think.Offer.AllTokens counts them), is where deferring
// stops paying: deferred definitions travel with every request (OpenAI
// also shows the model each deferred function's name and description), so
// past this size per-step selection within the budget costs less.

// deferral is what a run sends when the catalog goes as deferred tools:
// the first step's offer, loaded for the whole run (ending with
// search_tools), and the rest of the catalog, deferred.
type deferral struct {
	offer    think.Offer
	deferred []ToolDef
	tokens   int // deferred's tokens at full tier
	// cost is each deferred tool's tokens at full tier; budget the most
	// tokens of deferred definitions one search loads (the Think step's
	// budget).
	cost   map[string]int
	budget int
	// loaded names the deferred tools a search has loaded so far: a call
	// of one is a call of an offered tool.
	loaded map[string]bool
}

// load records the deferred tools a search found as loaded.
func (d *deferral) load(found []string) {
	for _, name := range found {
		if slices.ContainsFunc(d.deferred, func(t ToolDef) bool { return t.Name == name }) {
			if d.loaded == nil {
				d.loaded = map[string]bool{}
			}
			d.loaded[name] = true
		}
	}
}

// deferTools decides at a run's first step whether the catalog goes as
// deferred tools (see DeferringModel) and, when it does, renders it: every
// tool of the catalog but the offered ones with a schema, at full tier, by
// name; the step's request is then the deferral's offer. It returns nil to
// choose tools per step.
func (r *run) deferTools(off think.Offer) *deferral {
	a := r.a
	dm, ok := a.model.(DeferringModel)
	if !ok || !dm.DefersTools() {
		return nil
	}
	cat, ok := a.tools.(Catalog)
	limit := a.opts.MaxDeferredTokens
	if !ok || off.Everything || !off.HasSearchTool() || limit < 0 || off.AllTokens > limit {
		return nil
	}
	// The offer is loaded for the whole run; a listed tool (budget's
	// TierName, no parameters) goes with the deferred ones instead, whole,
	// so that a search loads its schema.
	skip := map[string]bool{}
	loaded := off
	loaded.Tools, loaded.Tokens = nil, 0
	for _, o := range off.Tools {
		if o.Tier == budget.TierName {
			continue
		}
		skip[o.Tool.Name] = true
		loaded.Tools = append(loaded.Tools, o)
		loaded.Tokens += o.Tokens
	}
	all := cat.Tools()
	slices.SortFunc(all, func(x, y tool.Tool) int { return cmp.Compare(x.Name, y.Name) })
	d := &deferral{offer: loaded, cost: map[string]int{}, budget: off.Budget}
	if d.budget <= 0 { // a Tools of its own that says no budget
		d.budget = think.DefaultBudget
	}
	for _, tl := range all {
		if skip[tl.Name] {
			continue
		}
		skip[tl.Name] = true
		rd, err := a.tok.CountTool(tl, budget.TierFull)
		if err != nil {
			continue // a tool that cannot be rendered cannot be offered either
		}
		d.deferred = append(d.deferred, ToolDef{Name: tl.Name, Description: rd.Description, Parameters: rd.Parameters,
			Server: tl.Server, OriginalName: tl.OriginalName})
		d.tokens += rd.Tokens
		d.cost[tl.Name] = rd.Tokens
	}
	if len(d.deferred) == 0 {
		return nil
	}
	return d
}

// fit is toolsift's budget on what one search loads: the found tools, best
// first, whose deferred definitions fit the budget together (the first
// always does; tools loaded already cost nothing). When some are left out,
// the answer's text (search_tools' {"tools":[...]}) is cut to the same
// tools, so that the model is told only of tools it can call.
func (d *deferral) fit(text string, found []string) (string, []string) {
	var keep []string
	spent, loads := 0, 0
	for _, name := range found {
		c, deferred := d.cost[name]
		if deferred && !d.loaded[name] {
			if loads > 0 && spent+c > d.budget {
				continue
			}
			spent += c
			loads++
		}
		keep = append(keep, name)
	}
	if len(keep) == len(found) {
		return text, found
	}
	var answer struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal([]byte(text), &answer); err != nil {
		return text, found // not search_tools' form: leave it whole
	}
	var tools []json.RawMessage
	for _, raw := range answer.Tools {
		var t struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(raw, &t) == nil && slices.Contains(keep, t.Name) {
			tools = append(tools, raw)
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(struct {
		Tools []json.RawMessage `json:"tools"`
	}{tools}) != nil {
		return text, found
	}
	return string(bytes.TrimSpace(b.Bytes())), keep
}

package main

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolsift/toolsift/budget"
	"github.com/toolsift/toolsift/think"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata/")

// explainRequest asks for two tools with a budget too small for both
// and, without packing, K too small for a third, and names one tool the
// catalog lacks.
var explainRequest = []string{"explain", "--no-cache", "--tools", "testdata/tools.jsonl", "--budget", "150", "--k", "3",
	"Email Bob that the meeting moved, then put it in my calendar for Monday 10am",
	"send_email", "create_calendar_event", "get_weather", "send-email"}

// explainArgs turn packing off, so that the golden has a tool below K
// (with the default packing every tool of the 6 competes for the budget:
// TestExplainJSON).
var explainArgs = append([]string{"explain", "--pack", "0"}, explainRequest[1:]...)

func TestExplainGolden(t *testing.T) {
	code, stdout, stderr := runToolbench(t, explainArgs...)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	golden := filepath.Join("testdata", "explain.golden")
	if *updateGolden {
		if err := os.WriteFile(golden, []byte(stdout), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), stdout); diff != "" {
		t.Errorf("explain output (-want +got; go test -run TestExplainGolden -update rewrites it):\n%s", diff)
	}
}

func TestExplainJSON(t *testing.T) {
	code, stdout, stderr := runToolbench(t, append(slices.Clone(explainRequest), "--json")...)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	var rep explainReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout)
	}
	// snake_case keys only.
	var raw map[string]any
	_ = json.Unmarshal([]byte(stdout), &raw)
	for k := range raw {
		if strings.ToLower(k) != k || strings.Contains(k, "-") {
			t.Errorf("key %q is not snake_case", k)
		}
	}
	got := map[string]string{}
	for _, tl := range rep.Tools {
		got[tl.Name] = tl.Decision
		if tl.Decision != "not_in_catalog" && len(tl.Signals) != len(rep.Signals) {
			t.Errorf("%s: %d signals, want %d", tl.Name, len(tl.Signals), len(rep.Signals))
		}
		if tl.Decision == "cut_by_budget" && tl.ShortByTokens != max(tl.CheapestTokens-rep.LeftTokens, 0) {
			t.Errorf("%s: short by %d, cheapest %d, left %d", tl.Name, tl.ShortByTokens, tl.CheapestTokens, rep.LeftTokens)
		}
	}
	// Packed (the default), get_weather competes for the budget: it is
	// cut by it, not below K as in the golden.
	if got["send-email"] != "not_in_catalog" || got["send_email"] != "offered" || got["get_weather"] != "cut_by_budget" {
		t.Errorf("decisions: %v", got)
	}
	if rep.LeftTokens != rep.BudgetTokens-rep.OfferedTokens || rep.BudgetTokens != 150 || rep.K != 3 || rep.Pack != think.DefaultPack || rep.CatalogTools != 6 {
		t.Errorf("report: %+v", rep)
	}
	for _, tl := range rep.Tools {
		if tl.Name == "send-email" && (len(tl.Close) == 0 || tl.Close[0] != "send_email") {
			t.Errorf("close names of send-email: %v", tl.Close)
		}
	}
}

// TestExplainListing: with --listing, the step of explainRequest at 250
// tokens lists create_calendar_event by name (its schema does not fit
// beside send_email's and search_tools), and explain says so; without it,
// or with --no-listing, nothing is listed.
func TestExplainListing(t *testing.T) {
	args := []string{"explain", "--no-cache", "--tools", "testdata/tools.jsonl", "--budget", "250", explainRequest[8], "create_calendar_event"}
	report := func(flags ...string) explainReport {
		t.Helper()
		code, stdout, stderr := runToolbench(t, append(append(slices.Clone(args), "--json"), flags...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d, stderr:\n%s", flags, code, stderr)
		}
		var rep explainReport
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatal(err)
		}
		return rep
	}
	listed := report("--listing")
	if listed.ListedTools != 1 || len(listed.Tools) != 1 || listed.Tools[0].Tier != budget.TierName.String() || listed.Tools[0].Decision != think.DecisionOffered {
		t.Errorf("--listing: %d listed, %+v; want create_calendar_event listed", listed.ListedTools, listed.Tools)
	}
	for _, flags := range [][]string{nil, {"--no-listing"}, {"--listing", "--no-listing"}} {
		if rep := report(flags...); rep.ListedTools != 0 || len(rep.Tools) != 1 || rep.Tools[0].Tier == budget.TierName.String() {
			t.Errorf("%v: %d listed, %+v; want none", flags, rep.ListedTools, rep.Tools)
		}
	}
	code, stdout, stderr := runToolbench(t, append(slices.Clone(args), "--listing")...)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	for _, want := range []string{"(1 of them listed by name only)", "listed (retrieved, name only, ", "the model asks search_tools for them before it can call it"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
}

func TestExplainUsage(t *testing.T) {
	for _, args := range [][]string{
		{"explain"},
		{"explain", "--tools", "a", "--config", "b", "x"},
		{"explain", "--mode", "fuzzy", "x"},
		{"explain", "--budget", "0", "x"},
		{"explain", "--pack", "-1", "x"},
	} {
		if code, _, stderr := runToolbench(t, args...); code != 2 || !strings.Contains(stderr, "Usage: toolbench explain") {
			t.Errorf("%q: exit %d, stderr:\n%s", args, code, stderr)
		}
	}
}

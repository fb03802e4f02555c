package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/budget"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/upstream"
)

func init() {
	register(command{name: "explain", summary: `say why a tool was, or was not, offered for a request ("why not my tool?")`, run: runExplain})
}

// explainReport is explain --json: one step explained.
type explainReport struct {
	Request       string  `json:"request"`
	Catalog       string  `json:"catalog"`
	CatalogTools  int     `json:"catalog_tools"`
	Mode          string  `json:"mode"`
	K             int     `json:"k"`
	Pack          int     `json:"pack"`
	MinScore      float64 `json:"min_score"`
	Depth         int     `json:"depth"`
	BudgetTokens  int     `json:"budget_tokens"`
	OfferedTokens int     `json:"offered_tokens"`
	LeftTokens    int     `json:"left_tokens"`
	OfferedTools  int     `json:"offered_tools"`
	// ListedTools is how many of OfferedTools are listed (--listing: the
	// name and a line, the parameters a search_tools step away).
	ListedTools int           `json:"listed_tools"`
	SearchTools bool          `json:"search_tools"`
	Everything  bool          `json:"everything"`
	Signals     []signalJSON  `json:"signals"`
	Tools       []explainTool `json:"tools"`
	// Incomplete names the servers whose tools the step could not
	// consider (still connecting, or failed): think.Incomplete.
	Incomplete *think.Incomplete `json:"incomplete,omitempty"`
}

type signalJSON struct {
	Signal string  `json:"signal"`
	Weight float64 `json:"weight"`
}

type explainTool struct {
	Name           string       `json:"name"`
	Server         string       `json:"server,omitempty"`
	Decision       string       `json:"decision"`
	Reason         string       `json:"reason,omitempty"`
	Tier           string       `json:"tier,omitempty"`
	Tokens         int          `json:"tokens,omitempty"`
	FullTokens     int          `json:"full_tokens"`
	CheapestTokens int          `json:"cheapest_tokens"`
	ShortByTokens  int          `json:"short_by_tokens,omitempty"`
	Rank           int          `json:"rank"`
	Score          float64      `json:"score"`
	Pinned         bool         `json:"pinned,omitempty"`
	Sticky         bool         `json:"sticky,omitempty"`
	Signals        []signalRank `json:"signals"`
	// Learned is what the usage memory (--learn) added, when it voted for
	// the tool.
	Learned *learnedJSON `json:"learned,omitempty"`
	Close   []string     `json:"close,omitempty"`
}

// learnedJSON is a tool's vote from the usage memory: the calls and
// identities behind it, the closest earlier request's similarity, the
// vote's weight and what it added to the score.
type learnedJSON struct {
	Calls      int     `json:"calls"`
	Identities int     `json:"identities"`
	Similarity float64 `json:"similarity"`
	Weight     float64 `json:"weight"`
	Lift       float64 `json:"lift"`
}

type signalRank struct {
	Signal string  `json:"signal"`
	Rank   int     `json:"rank"`
	Score  float64 `json:"score"`
}

func runExplain(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "explain", `[--config mcp.json | --tools T.jsonl] [flags] "request" [TOOL...]

Runs one Think step for the request, as the agent would, and says for each
TOOL (or, without one, each tool the step considered) whether it was
offered and why not: its rank and score in the fused ranking and in each
signal's (BM25F, n-gram vectors, semantic vectors), pinned or sticky, cut
at K or by the score threshold, or by the token budget (and by how many
tokens). A TOOL that is not in the catalog gets the closest names.
Without --config and --tools, the catalog is the embedded BFCL one. With
--learn, the step ranks with a usage memory that first learned the file's
requests, each as a call of its gold tools, and says which tools it lifted
("learned from N calls").`)
	configPath := fs.String("config", "", "mcpServers config `file`: explain over its servers' tools (served from the cache when it has them)")
	toolsPath := fs.String("tools", "", "tools.jsonl `file` to explain over instead")
	toolBudget := fs.Int("budget", think.DefaultBudget, "tool-schema token `budget` of the step")
	k := fs.Int("k", think.DefaultK, "how many ranked tools the step considers (`K`)")
	pack := packFlag(fs)
	listing := listingFlags(fs)
	modeName := fs.String("mode", "hybrid", "ranking `mode`: hybrid, semantic, vector or lexical")
	model := fs.String("model", "gpt-4o", "chat `model` whose tokenizer counts the budget")
	asJSON := fs.Bool("json", false, "print the explanation as one JSON object")
	timeout := fs.Duration("timeout", 30*time.Second, "per-server connect `timeout` with --config")
	cache := cacheFlags(fs)
	quiet := quietFlag(fs)
	inputs := inputFlag(fs)
	learnPath := fs.String("learn", "", "queries.jsonl `file` whose requests a usage memory learns before the step, each as a call of its gold tools (the first of each group): the step ranks with what it learned")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	modes, modeErr := parseModes(*modeName)
	switch {
	case fs.NArg() == 0 || strings.TrimSpace(fs.Arg(0)) == "":
		return usageError(fs, "the request is required")
	case *configPath != "" && *toolsPath != "":
		return usageError(fs, "--tools and --config are exclusive: tools come from a file or from live servers")
	case modeErr != nil || len(modes) != 1:
		return usageError(fs, "--mode %q: want one of hybrid, semantic, vector or lexical", *modeName)
	case *toolBudget <= 0:
		return usageError(fs, "--budget %d: want a positive number of tokens", *toolBudget)
	case *k <= 0:
		return usageError(fs, "--k %d: want a positive number of tools", *k)
	case *pack < 0:
		return usageError(fs, "--pack %d: want 0 or a positive number of tools", *pack)
	case *timeout <= 0:
		return usageError(fs, "--timeout %v: want a positive duration", *timeout)
	}
	request, names := fs.Arg(0), fs.Args()[1:]
	tok, err := budget.NewTokenizer(*model, "")
	if err != nil {
		return err
	}
	o := toolsift.Options{Logger: slog.New(warnHandler{e})}
	if err := cache(ctx, &o); err != nil {
		return err
	}
	step := think.Options{Budget: *toolBudget, Tokenizer: tok, Retrieval: retrieval.Options{K: *k, Mode: modes[0]}}
	setPack(&step, *pack)
	listing(&step)
	if o.Thinker, err = stepThinker(e, &o, nil, nil, step); err != nil {
		return err
	}
	var ts *toolsift.Toolset
	var catalog string
	switch {
	case *configPath != "":
		c := connection{hub: upstream.HubOptions{Timeout: *timeout}, inputs: inputs}
		if ts, _, _, err = openToolset(ctx, e, *configPath, c, o, *quiet); err != nil {
			return err
		}
		warnFailed(e, ts.Status(), " (its tools are not explained)")
		catalog = *configPath
	case *toolsPath != "":
		tools, err := loadToolsQualified(e, *toolsPath)
		if err != nil {
			return err
		}
		if ts, err = toolsift.New(ctx, tools, &o); err != nil {
			return err
		}
		catalog = *toolsPath
	default:
		tools, _, err := loadDefaultData()
		if err != nil {
			return err
		}
		if ts, err = toolsift.New(ctx, tools, &o); err != nil {
			return err
		}
		catalog = "embedded BFCL"
	}
	defer ts.Close()

	req := think.Request{Query: retrieval.Query{Task: request}}
	var ex think.Explanation
	if *learnPath != "" {
		// The Toolset's step with a memory of its own: the servers the
		// Toolset is missing are said as its own Explain says them.
		th, err := learnedThinker(ctx, o.Thinker, *learnPath)
		if err != nil {
			return err
		}
		if ex, err = th.Explain(ctx, req, names...); err != nil {
			return err
		}
		ex.Offer.Incomplete = ts.Unlisted(ctx)
	} else if ex, err = ts.Explain(ctx, req, names...); err != nil {
		return err
	}
	rep := newExplainReport(request, catalog, len(ts.Tools()), *pack, ex)
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	printExplain(e.stdout, rep, len(names) > 0)
	return nil
}

// newExplainReport reports ex; pack is the step's packing, whose tools the
// retriever's K counts too.
func newExplainReport(request, catalog string, n, pack int, ex think.Explanation) explainReport {
	off := ex.Offer
	rep := explainReport{
		Request: request, Catalog: catalog, CatalogTools: n,
		Mode: ex.Retrieval.Mode.String(), K: ex.Retrieval.K - pack, Pack: pack, MinScore: ex.Retrieval.MinScore, Depth: ex.Retrieval.Depth,
		BudgetTokens: ex.Budget, OfferedTokens: off.Tokens, LeftTokens: ex.Left,
		OfferedTools: len(off.Names()), ListedTools: len(off.Listed()), SearchTools: off.HasSearchTool(), Everything: off.Everything,
		Signals: []signalJSON{}, Tools: []explainTool{}, Incomplete: off.Incomplete,
	}
	for _, s := range ex.Retrieval.Signals {
		rep.Signals = append(rep.Signals, signalJSON{Signal: s.Signal.String(), Weight: s.Weight})
	}
	for _, te := range ex.Tools {
		t := explainTool{
			Name: te.Name, Server: te.Server, Decision: te.Decision, Reason: te.Reason,
			FullTokens: te.FullTokens, CheapestTokens: te.CheapestTokens, ShortByTokens: te.ShortBy,
			Rank: te.Rank, Score: round3(te.Score), Pinned: te.Pinned, Sticky: te.Sticky,
			Signals: []signalRank{}, Close: te.Close,
		}
		if te.Decision == think.DecisionOffered {
			t.Tier, t.Tokens = te.Tier.String(), te.Tokens
		}
		for _, s := range te.Signals {
			t.Signals = append(t.Signals, signalRank{Signal: s.Signal.String(), Rank: s.Rank, Score: round3(s.Score)})
		}
		if u := te.Usage; u.Calls > 0 {
			t.Learned = &learnedJSON{Calls: u.Calls, Identities: u.Identities, Similarity: round3(u.Similarity), Weight: round3(u.Weight), Lift: round3(u.Lift)}
		}
		rep.Tools = append(rep.Tools, t)
	}
	return rep
}

func round3(v float64) float64 { return float64(int64(v*1000+0.5)) / 1000 }

// printExplain writes the explanation for a person: the step in one line,
// then a table of the tools, then, for tools asked about, a sentence each.
func printExplain(w io.Writer, rep explainReport, asked bool) {
	fmt.Fprintf(w, "request: %s\n", quoteLine(rep.Request))
	var sigs []string
	for _, s := range rep.Signals {
		sigs = append(sigs, fmt.Sprintf("%s×%g", s.Signal, s.Weight))
	}
	fmt.Fprintf(w, "catalog: %s, %d tools; mode %s (%s); K %d", rep.Catalog, rep.CatalogTools, rep.Mode, strings.Join(sigs, " + "), rep.K)
	if rep.Pack > 0 {
		fmt.Fprintf(w, " + pack %d", rep.Pack)
	}
	if rep.MinScore > 0 {
		fmt.Fprintf(w, "; min score %g", rep.MinScore)
	}
	fmt.Fprintln(w)
	search := ""
	if rep.SearchTools {
		search = " with search_tools"
	}
	switch {
	case rep.Everything:
		fmt.Fprintf(w, "offered: the whole catalog fits: %s, %d of %d tokens\n\n", runPlural(rep.OfferedTools, "tool"), rep.OfferedTokens, rep.BudgetTokens)
	default:
		listed := ""
		if rep.ListedTools > 0 {
			listed = fmt.Sprintf(" (%d of them listed by name only)", rep.ListedTools)
		}
		fmt.Fprintf(w, "offered: %s%s%s, %d of %d tokens (%d left)\n\n", runPlural(rep.OfferedTools, "tool"), listed, search, rep.OfferedTokens, rep.BudgetTokens, rep.LeftTokens)
	}
	if rep.Incomplete != nil {
		fmt.Fprintf(w, "not considered: %s\n\n", termSafe(rep.Incomplete.Note))
	}

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "RANK\tTOOL\tSCORE"
	for _, s := range rep.Signals {
		head += "\t" + strings.ToUpper(s.Signal)
	}
	fmt.Fprintln(tw, head+"\tDECISION")
	for _, t := range rep.Tools {
		line := rankText(t.Rank) + "\t" + termSafe(t.Name) + "\t" + scoreText(t.Rank, t.Score)
		for _, s := range t.Signals {
			line += "\t" + rankText(s.Rank)
			if s.Rank > 0 {
				line += " " + fmt.Sprintf("%.2f", s.Score)
			}
		}
		d := decisionText(t, rep)
		if t.Learned != nil {
			d += "; " + learnedText(t.Learned)
		}
		fmt.Fprintln(tw, line+"\t"+d)
	}
	tw.Flush()
	if !asked {
		return
	}
	for _, t := range rep.Tools {
		fmt.Fprintf(w, "\n%s: %s\n", termSafe(t.Name), whyText(t, rep))
	}
}

func rankText(r int) string {
	if r == 0 {
		return "-"
	}
	return fmt.Sprintf("#%d", r)
}

func scoreText(rank int, s float64) string {
	if rank == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f", s)
}

// decisionText is the table's short form of a decision.
func decisionText(t explainTool, rep explainReport) string {
	switch t.Decision {
	case think.DecisionOffered:
		if t.Tier == budget.TierName.String() {
			return fmt.Sprintf("listed (%s, name only, %d tok)", t.Reason, t.Tokens)
		}
		return fmt.Sprintf("offered (%s, %s, %d tok)", t.Reason, t.Tier, t.Tokens)
	case think.DecisionCutByBudget:
		if t.ShortByTokens > 0 {
			return fmt.Sprintf("cut by budget (short %d tok)", t.ShortByTokens)
		}
		return "cut by budget"
	case think.DecisionBelowK:
		if rep.Pack > 0 {
			return fmt.Sprintf("below K+pack=%d", rep.K+rep.Pack)
		}
		return fmt.Sprintf("below K=%d", rep.K)
	case think.DecisionBelowMinScore:
		return fmt.Sprintf("below min score %g", rep.MinScore)
	case think.DecisionOversized:
		return "larger than the budget"
	case think.DecisionNotRanked:
		return "not ranked"
	case think.DecisionNotInCatalog:
		return "not in the catalog"
	}
	return t.Decision
}

// whyText says in a sentence what became of a tool asked about.
func whyText(t explainTool, rep explainReport) string {
	var b strings.Builder
	switch t.Decision {
	case think.DecisionOffered:
		if t.Tier == budget.TierName.String() {
			fmt.Fprintf(&b, "listed (%s): its name and one line, %d tokens, no parameters (%d at full tier); the model asks search_tools for them before it can call it", t.Reason, t.Tokens, t.FullTokens)
			break
		}
		fmt.Fprintf(&b, "offered (%s) at tier %s, %d tokens (%d at full tier)", t.Reason, t.Tier, t.Tokens, t.FullTokens)
	case think.DecisionNotInCatalog:
		b.WriteString("not offered: there is no tool of that name")
		if len(t.Close) > 0 {
			var q []string
			for _, c := range t.Close {
				q = append(q, termSafe(c))
			}
			fmt.Fprintf(&b, "; closest: %s", strings.Join(q, ", "))
		}
		return b.String()
	case think.DecisionCutByBudget:
		fmt.Fprintf(&b, "not offered: ranked #%d, a candidate, but cut by the budget: it costs %d tokens at its cheapest tier (%d at full), %d were left",
			t.Rank, t.CheapestTokens, t.FullTokens, rep.LeftTokens)
		if t.ShortByTokens > 0 {
			fmt.Fprintf(&b, ", %d short (try --budget %d)", t.ShortByTokens, rep.BudgetTokens+t.ShortByTokens)
		} else {
			b.WriteString("; the tools kept were worth more per token")
		}
	case think.DecisionOversized:
		fmt.Fprintf(&b, "not offered: it costs %d tokens even at its cheapest tier, more than the whole budget of %d, and it was not clearly wanted", t.CheapestTokens, rep.BudgetTokens)
	case think.DecisionBelowK:
		fmt.Fprintf(&b, "not offered: ranked #%d, after the %d best the step considers (try --k %d)", t.Rank, rep.K+rep.Pack, t.Rank-rep.Pack)
	case think.DecisionBelowMinScore:
		fmt.Fprintf(&b, "not offered: ranked #%d with score %.3f, under the min score %g", t.Rank, t.Score, rep.MinScore)
	case think.DecisionNotRanked:
		fmt.Fprintf(&b, "not offered: not among the %d best of the fused ranking", rep.Depth)
	}
	var parts []string
	for _, s := range t.Signals {
		if s.Rank == 0 {
			parts = append(parts, s.Signal+" -")
		} else {
			parts = append(parts, fmt.Sprintf("%s #%d (%.2f)", s.Signal, s.Rank, s.Score))
		}
	}
	if len(parts) > 0 {
		fmt.Fprintf(&b, "\n  signals: %s", strings.Join(parts, ", "))
	}
	if l := t.Learned; l != nil {
		who := "1 identity"
		if l.Identities != 1 {
			who = fmt.Sprintf("%d identities", l.Identities)
		}
		fmt.Fprintf(&b, "\n  %s by %s (closest earlier request %.2f alike): its vote %.2f added %.3f to the score", learnedText(l), who, l.Similarity, l.Weight, l.Lift)
	}
	if t.Pinned {
		b.WriteString("\n  pinned")
	}
	if t.Sticky {
		b.WriteString("\n  sticky (used earlier)")
	}
	return b.String()
}

// learnedText is "learned from N calls".
func learnedText(l *learnedJSON) string {
	return "learned from " + runPlural(l.Calls, "call")
}

// quoteLine quotes a request for one line of output.
func quoteLine(s string) string { return termSafe(fmt.Sprintf("%q", s)) }

// termSafe keeps a server's text from steering the terminal: control
// characters become their Go escapes.
func termSafe(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }) {
		return s
	}
	q := fmt.Sprintf("%q", s)
	return q[1 : len(q)-1]
}

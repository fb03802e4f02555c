package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/budget"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/upstream"
)

func init() {
	register(command{name: "tokens", summary: "report what a set of tools costs in prompt tokens, at every compression tier", run: runTokens})
}

// tokensReport is the output of `tokens --json`. Token counts are of each
// tool's Chat Completions JSON (budget.Tokenizer.CountTool); total_tokens is
// the full tier.
type tokensReport struct {
	Encoding    string                  `json:"encoding"`
	Tools       int                     `json:"tools"`
	TotalTokens int                     `json:"total_tokens"`
	Tiers       map[string]int          `json:"tiers"`
	Servers     map[string]serverTokens `json:"servers"`
	Largest     []toolTokens            `json:"largest"`
	// RequestOverhead estimates what a provider adds on top when all the
	// tools are sent: budget.ToolsRequestOverhead + one per-tool overhead
	// each (approximate, see the budget package).
	RequestOverhead int `json:"request_overhead"`
}

type serverTokens struct {
	Tools  int            `json:"tools"`
	Tokens int            `json:"tokens"`
	Tiers  map[string]int `json:"tiers"`
}

type toolTokens struct {
	Name   string         `json:"name"`
	Server string         `json:"server,omitempty"`
	Tokens int            `json:"tokens"`
	Tiers  map[string]int `json:"tiers"`
}

func runTokens(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "tokens", "(--config mcp.json [--connect] [--input ID=VALUE] [--quiet] | --tools tools.jsonl) [--json] [--encoding NAME | --model NAME] [--top N]")
	config := fs.String("config", "", "mcpServers config `file`: connect to the servers and measure the tools they list")
	toolsPath := fs.String("tools", "", "tools.jsonl `file` to measure")
	asJSON := fs.Bool("json", false, "print the report as one JSON object")
	encoding := fs.String("encoding", "", "tiktoken `encoding` (o200k_base, cl100k_base, ...); overrides --model")
	model := fs.String("model", "", "`model` whose encoding to use (default o200k_base)")
	top := fs.Int("top", 10, "how many of the largest tools to list")
	timeout := fs.Duration("timeout", 30*time.Second, "per-server connect `timeout` with --config, for servers whose config sets none")
	cache := cacheFlags(fs)
	connect := connectFlag(fs)
	quiet := quietFlag(fs)
	inputs := inputFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case *config == "" && *toolsPath == "":
		return usageError(fs, "--config or --tools is required")
	case *config != "" && *toolsPath != "":
		return usageError(fs, "--config and --tools are exclusive: tools come from live servers or from a file")
	case fs.NArg() > 0:
		return usageError(fs, "unexpected argument %q", fs.Arg(0))
	case *top < 0:
		return usageError(fs, "--top %d: want 0 or more", *top)
	case *timeout <= 0:
		return usageError(fs, "--timeout %v: want a positive duration", *timeout)
	}
	tok, err := budget.NewTokenizer(*model, *encoding)
	if err != nil {
		return err
	}
	var tools []tool.Tool
	if *toolsPath != "" {
		tools, err = loadToolsQualified(e, *toolsPath)
	} else {
		c := connection{hub: upstream.HubOptions{Timeout: *timeout, MaxRestarts: -1, Start: startMode(*connect)}, inputs: inputs}
		var o toolsift.Options
		if err = cache(ctx, &o); err == nil {
			tools, err = listConfigTools(ctx, e, *config, c, o, *quiet)
		}
	}
	if err != nil {
		return err
	}
	rep, err := measureTokens(ctx, tok, tools, *top)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	writeTokens(e, rep)
	return nil
}

// listConfigTools returns the tools of an mcpServers config's servers:
// from the cache for those it holds (said on stderr, with its age), unless
// c.hub.Start is eager. Servers that fail are reported on stderr.
func listConfigTools(ctx context.Context, e *env, config string, c connection, o toolsift.Options, quiet bool) ([]tool.Tool, error) {
	ts, _, _, err := openToolset(ctx, e, config, c, o, quiet)
	if err != nil {
		return nil, err
	}
	tools := ts.Tools()
	statuses := ts.Status()
	if err := ts.Close(); err != nil {
		return nil, err
	}
	warnFailed(e, statuses, " (its tools are not counted)")
	if note := cacheNote(statuses, time.Now()); note != "" {
		fmt.Fprintln(e.stderr, note)
	}
	return tools, nil
}

// measureTokens renders every tool at every tier, on all CPUs.
func measureTokens(ctx context.Context, tok *budget.Tokenizer, tools []tool.Tool, top int) (*tokensReport, error) {
	costs := make([][budget.NumTiers]int, len(tools))
	errs := make([]error, len(tools))
	next := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range next {
				for tier := range budget.Tier(budget.NumTiers) {
					r, err := tok.CountTool(tools[i], tier)
					if err != nil {
						errs[i] = err
						break
					}
					costs[i][tier] = r.Tokens
				}
			}
		})
	}
feed:
	for i := range tools {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, err := range errs {
		if err != nil {
			return nil, err // the first, in file order
		}
	}

	tierMap := func(c [budget.NumTiers]int) map[string]int {
		m := make(map[string]int, budget.NumTiers)
		for tier := range budget.Tier(budget.NumTiers) {
			m[tier.String()] = c[tier]
		}
		return m
	}
	var total [budget.NumTiers]int
	perServer := map[string]*[budget.NumTiers]int{}
	count := map[string]int{}
	overhead := budget.ToolOverheadO200K
	if tok.Encoding() != budget.EncodingO200K {
		overhead = budget.ToolOverheadCL100K
	}
	rep := &tokensReport{Encoding: tok.Encoding(), Tools: len(tools), Servers: map[string]serverTokens{}}
	if len(tools) > 0 {
		rep.RequestOverhead = budget.ToolsRequestOverhead + overhead*len(tools)
	}
	for i, t := range tools {
		s := perServer[t.Server]
		if s == nil {
			s = new([budget.NumTiers]int)
			perServer[t.Server] = s
		}
		count[t.Server]++
		for tier := range costs[i] {
			total[tier] += costs[i][tier]
			s[tier] += costs[i][tier]
		}
	}
	rep.TotalTokens = total[budget.TierFull]
	rep.Tiers = tierMap(total)
	for name, s := range perServer {
		rep.Servers[name] = serverTokens{Tools: count[name], Tokens: s[budget.TierFull], Tiers: tierMap(*s)}
	}
	order := make([]int, len(tools))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := cmp.Compare(costs[b][budget.TierFull], costs[a][budget.TierFull]); c != 0 {
			return c
		}
		return cmp.Compare(tools[a].Name, tools[b].Name)
	})
	rep.Largest = []toolTokens{}
	for _, i := range order[:min(top, len(order))] {
		rep.Largest = append(rep.Largest, toolTokens{Name: tools[i].Name, Server: tools[i].Server, Tokens: costs[i][budget.TierFull], Tiers: tierMap(costs[i])})
	}
	return rep, nil
}

func writeTokens(e *env, rep *tokensReport) {
	w := e.stdout
	fmt.Fprintf(w, "%d tools from %d servers, encoding %s; tokens of each tool's Chat Completions JSON\n\n", rep.Tools, len(rep.Servers), rep.Encoding)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "TIER\tTOKENS\tOF FULL\t")
	for tier := range budget.Tier(budget.NumTiers) {
		n := rep.Tiers[tier.String()]
		fmt.Fprintf(tw, "%s\t%d\t%s\t\n", tier, n, percent(n, rep.TotalTokens))
	}
	tw.Flush()
	if rep.RequestOverhead > 0 {
		fmt.Fprintf(w, "(a provider adds about %d more for %d tools: %d per request + %d per tool, approximate)\n",
			rep.RequestOverhead, rep.Tools, budget.ToolsRequestOverhead, (rep.RequestOverhead-budget.ToolsRequestOverhead)/max(rep.Tools, 1))
	}

	names := make([]string, 0, len(rep.Servers))
	for n := range rep.Servers {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		if c := cmp.Compare(rep.Servers[b].Tokens, rep.Servers[a].Tokens); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "SERVER\tTOOLS")
	for tier := range budget.Tier(budget.NumTiers) {
		fmt.Fprintf(tw, "\t%s", tier)
	}
	fmt.Fprintln(tw, "\t")
	for _, n := range names {
		s := rep.Servers[n]
		label := n
		if label == "" {
			label = "(none)"
		}
		fmt.Fprintf(tw, "%s\t%d", label, s.Tools)
		for tier := range budget.Tier(budget.NumTiers) {
			fmt.Fprintf(tw, "\t%d", s.Tiers[tier.String()])
		}
		fmt.Fprintln(tw, "\t")
	}
	fmt.Fprintf(tw, "TOTAL\t%d", rep.Tools)
	for tier := range budget.Tier(budget.NumTiers) {
		fmt.Fprintf(tw, "\t%d", rep.Tiers[tier.String()])
	}
	fmt.Fprintln(tw, "\t")
	tw.Flush()

	if len(rep.Largest) > 0 {
		fmt.Fprintf(w, "\nLARGEST %d TOOLS\n", len(rep.Largest))
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprint(tw, "TOOL\tSERVER")
		for tier := range budget.Tier(budget.NumTiers) {
			fmt.Fprintf(tw, "\t%s", tier)
		}
		fmt.Fprintln(tw, "\t")
		for _, t := range rep.Largest {
			fmt.Fprintf(tw, "%s\t%s", t.Name, t.Server)
			for tier := range budget.Tier(budget.NumTiers) {
				fmt.Fprintf(tw, "\t%d", t.Tiers[tier.String()])
			}
			fmt.Fprintln(tw, "\t")
		}
		tw.Flush()
	}
}

func percent(n, of int) string {
	if of == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(of))
}

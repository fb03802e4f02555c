package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/agent"
	"github.com/toolsift/toolsift/budget"
	"github.com/toolsift/toolsift/internal/termsafe"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/upstream"
)

func init() {
	register(command{name: "run", summary: "run the agent on a task with the tools of an MCP config, printing every step", run: runAgent})
}

// errNoEndpoint explains how to configure the chat model.
var errNoEndpoint = errors.New(`no chat model endpoint configured. Set one of:
  OPENAI_API_KEY=sk-...                      to use api.openai.com
  OPENAI_BASE_URL=http://localhost:11434/v1  (or --base-url) for any OpenAI-compatible server (Ollama, vLLM, llama.cpp, LiteLLM);
                                             OPENAI_API_KEY is then optional
and pick the model with --model (default gpt-4o-mini)`)

func runAgent(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "run", `--config mcp.json [--model M] [--base-url U] [--budget N] [--max-steps N] [flags] "task"`)
	config := fs.String("config", "", "mcpServers config `file` (required)")
	model := fs.String("model", "gpt-4o-mini", "chat `model` name")
	hosted := hostedFlag(fs)
	api := fs.String("api", "chat", "model `API`: chat (Chat Completions), responses (OpenAI Responses: deferred tools found by tool_search) or anthropic")
	baseURL := fs.String("base-url", "", "OpenAI-compatible API base `URL` (default $OPENAI_BASE_URL, else https://api.openai.com/v1)")
	toolBudget := fs.Int("budget", think.DefaultBudget, "tool-definition `tokens` offered per step")
	maxSteps := fs.Int("max-steps", agent.DefaultMaxSteps, "most model calls before giving up")
	k := fs.Int("k", think.DefaultK, "ranked tools considered per step (besides sticky and found ones); the budget decides what is sent")
	pack := packFlag(fs)
	listing := listingFlags(fs)
	obsBudget := fs.Int("observation-budget", agent.DefaultObservationBudget, "most `tokens` of one tool result shown to the model")
	toolTimeout := fs.Duration("tool-timeout", agent.DefaultToolTimeout, "`timeout` of each tool call")
	connectTimeout := fs.Duration("timeout", 30*time.Second, "per-server connect `timeout`, for servers whose config sets none")
	stream := fs.Bool("stream", false, "stream the model's responses, printing them as they arrive (the server must stream)")
	search := fs.String("search-tools", "auto", "offer the search_tools meta-tool: auto (whenever a tool is left out), always or never")
	policy := fs.String("policy", think.PolicyStable.String(), "tool list across steps: stable (keep the tools offered, append new ones: the prompt cache keeps hitting) or fresh (choose afresh at every step)")
	pricesFlag := fs.String("prices", "", "price `model` of the estimated cost: a preset ("+strings.Join(budget.PricePresetNames(), ", ")+
		") or input,cached_input,cache_write,output in USD per million tokens (default: the --model's preset, else claude-sonnet-5)")
	asJSON := fs.Bool("json", false, "print the Result as JSON on stdout instead of the steps")
	verbose := fs.Bool("v", false, "log the agent's and the servers' diagnostics to stderr")
	approve := fs.Bool("approve", false, "ask on the terminal before each call of a tool not marked read-only")
	eager := fs.Bool("eager", false, "start every server at once, not only those the agent calls (cached servers start lazily by default)")
	idle := fs.Duration("idle-timeout", 0, "stop a server not called for this `long` (default 5m; negative: never)")
	cache := cacheFlags(fs)
	quiet := quietFlag(fs)
	inputs := inputFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	task := strings.TrimSpace(strings.Join(fs.Args(), " "))
	searchMode, ok := map[string]think.SearchMode{"auto": think.SearchAuto, "always": think.SearchAlways, "never": think.SearchNever}[*search]
	pol, polOK := think.ParsePolicy(*policy)
	prices, pricesName, pricesErr := runPrices(*pricesFlag, *model)
	switch {
	case *config == "":
		return usageError(fs, "--config is required")
	case task == "":
		return usageError(fs, "the task is missing (the text after the flags)")
	case !ok:
		return usageError(fs, "--search-tools %q: want auto, always or never", *search)
	case !polOK:
		return usageError(fs, "--policy %q: want stable or fresh", *policy)
	case *toolBudget <= 0:
		return usageError(fs, "--budget %d: want a positive number of tokens", *toolBudget)
	case *k <= 0:
		return usageError(fs, "--k %d: want a positive number of tools", *k)
	case *pack < 0:
		return usageError(fs, "--pack %d: want 0 or a positive number of tools", *pack)
	case *maxSteps <= 0:
		return usageError(fs, "--max-steps %d: want a positive number of steps", *maxSteps)
	case *obsBudget <= 0:
		return usageError(fs, "--observation-budget %d: want a positive number of tokens", *obsBudget)
	case *toolTimeout <= 0:
		return usageError(fs, "--tool-timeout %v: want a positive duration", *toolTimeout)
	case *connectTimeout <= 0:
		return usageError(fs, "--timeout %v: want a positive duration", *connectTimeout)
	case pricesErr != nil:
		return usageError(fs, "--prices: %v", pricesErr)
	case !slices.Contains(apis, *api):
		return usageError(fs, "--api %q: want chat, responses or anthropic", *api)
	}

	// The endpoint is checked first: no point starting servers without it.
	chat, base, err := newModel(e, *api, *model, *baseURL, *stream, *hosted)
	if err != nil {
		return err
	}

	logger := slog.New(slog.DiscardHandler)
	if *verbose {
		logger = slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	tok, err := budget.NewTokenizer(*model, "")
	if err != nil {
		return err
	}
	hubOpts := upstream.HubOptions{Timeout: *connectTimeout, IdleTimeout: *idle}
	if *eager {
		hubOpts.Start = upstream.StartEager
	}
	o := toolsift.Options{Logger: logger}
	if err := cache(ctx, &o); err != nil {
		return err
	}
	step := think.Options{
		Budget:    *toolBudget,
		Retrieval: retrieval.Options{K: *k},
		Search:    searchMode,
		Tokenizer: tok,
		Policy:    pol,
		Prices:    prices,
	}
	setPack(&step, *pack)
	listing(&step)
	if o.Thinker, err = stepThinker(e, &o, nil, nil, step); err != nil {
		return err
	}
	ts, _, elapsed, err := openToolset(ctx, e, *config, connection{hub: hubOpts, inputs: inputs}, o, *quiet || *verbose) // -v logs each server's start instead
	if err != nil {
		return err
	}
	defer ts.Close()
	statuses := ts.Status()
	warnFailed(e, statuses, "")
	var names []string
	for _, st := range statuses {
		names = append(names, st.Name)
	}
	if err := checkHosted(*hosted, names, *config); err != nil {
		return err
	}
	if o.Thinker.Index().Len() == 0 {
		return fmt.Errorf("no tools: none of the %d servers in %s is ready", len(statuses), *config)
	}

	p := &stepPrinter{w: e.stdout, prices: pricesName}
	opts := &agent.Options{
		MaxSteps:          *maxSteps,
		ObservationBudget: *obsBudget,
		ToolTimeout:       *toolTimeout,
		Tokenizer:         tok,
		Logger:            logger,
		Prices:            prices,
	}
	if *approve {
		opts.Approve = terminalApprover(e)
	}
	if !*asJSON {
		opts.OnEvent = p.event
		fmt.Fprintf(e.stdout, "%s from %s in %.1fs · model %s (%s API) at %s · budget %d tokens · policy %s · prices %s\n",
			runPlural(o.Thinker.Index().Len(), "tool"), runPlural(len(statuses), "server"), elapsed.Seconds(), *model, *api, base, *toolBudget, pol, pricesName)
	}
	a, err := agent.New(chat, ts, opts)
	if err != nil {
		return err
	}
	runStart := time.Now()
	res, runErr := a.Run(ctx, task)
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		p.summary(res, time.Since(runStart))
	}
	if errors.Is(runErr, agent.ErrNoStream) {
		return &noStreamError{err: runErr, model: *model, base: base}
	}
	return runErr
}

// noStreamError is what run says when --stream met a server that does not
// stream: the flag to drop, rather than the library's option.
type noStreamError struct {
	err         error
	model, base string
}

func (e *noStreamError) Error() string {
	return fmt.Sprintf("model %s at %s: the server does not stream (it answered the streaming request without an event stream): run without --stream", e.model, e.base)
}

func (e *noStreamError) Unwrap() error { return e.err }

// runPrices resolves --prices: a preset or four numbers; empty means the
// model's preset, else budget.DefaultPrices. The name says which.
func runPrices(flag, model string) (budget.Prices, string, error) {
	if flag == "" {
		if p, ok := budget.PricePreset(model); ok {
			return p, model, nil
		}
		return budget.DefaultPrices, "claude-sonnet-5 (default; set --prices)", nil
	}
	p, err := budget.ParsePrices(flag)
	if err != nil {
		return p, "", err
	}
	if _, preset := budget.PricePreset(strings.TrimSpace(flag)); preset {
		return p, strings.TrimSpace(flag), nil
	}
	return p, fmt.Sprintf("$%g in, $%g cached, $%g write, $%g out per Mtok", p.Input, p.CachedInput, p.Write(), p.Output), nil
}

// stepPrinter prints agent events as they come.
type stepPrinter struct {
	mu     sync.Mutex
	w      io.Writer
	prices string // the price model's name, for the summary
	// live is the streamed reply being printed (stream.go).
	live liveLine
}

func (p *stepPrinter) event(ev agent.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.w
	if ev.Kind == agent.EventDelta {
		p.live.add(w, ev.Delta)
		return
	}
	p.live.done(w)
	switch ev.Kind {
	case agent.EventThink:
		fmt.Fprintf(w, "\nstep %d · offered %s · %d tokens (all %s: %d tokens) · %s\n",
			ev.Step, runPlural(len(ev.Offered), "tool"), ev.ToolTokens, runPlural(ev.AllTools, "tool"), ev.AllToolsTokens, ev.Latency.Round(time.Millisecond))
		writeOffered(w, ev.Offered)
		if ev.DeferredTools > 0 {
			fmt.Fprintf(w, "  and %s deferred (%d tokens): the model loads them with its tool search\n", runPlural(ev.DeferredTools, "tool"), ev.DeferredTokens)
		}
		if ev.PromptCache.PromptTokens > 0 {
			fmt.Fprintf(w, "  prompt: %s\n", cacheText(ev.PromptCache, ev.Step))
		}
	case agent.EventModel:
		fmt.Fprintf(w, "  model: %s, %s; usage: %s; estimated cost $%.5f\n",
			runPlural(len(ev.Message.ToolCalls), "tool call"), ev.Latency.Round(time.Millisecond), usageText(ev.Usage), ev.EstimatedCost)
		for _, h := range ev.Message.Hosted {
			res := "→ " + runLine(h.Output, 200)
			if h.Error != "" {
				res = "→ error: " + runLine(h.Error, 200)
			}
			fmt.Fprintf(w, "  hosted call %s %s %s (by the provider) %s\n", termsafe.String(h.Server), termsafe.String(h.Name), runLine(h.Arguments, 120), res)
		}
		if ev.Message.Content != "" && len(ev.Message.ToolCalls) > 0 {
			fmt.Fprintf(w, "  thought: %s\n", runLine(ev.Message.Content, 200))
		}
	case agent.EventToolResult:
		c := ev.Call
		note := ""
		if !c.Offered {
			note = " (not offered)"
		}
		fmt.Fprintf(w, "  call %s %s%s → %s, %d tokens", c.Name, runLine(c.Arguments, 120), note, c.Outcome, c.Tokens)
		if c.RawTokens > c.Tokens {
			fmt.Fprintf(w, " (cut from %d)", c.RawTokens)
		}
		fmt.Fprintf(w, ", %s\n    %s\n", c.Latency.Round(time.Millisecond), runLine(c.Observation, 200))
	}
}

func (p *stepPrinter) summary(res *agent.Result, elapsed time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.w
	if res == nil {
		return
	}
	if res.Answer != "" {
		fmt.Fprintf(w, "\nanswer:\n%s\n", termsafe.String(res.Answer))
	}
	saved := ""
	if res.AllToolsTokens > 0 {
		saved = " (" + percentLess(res.ToolTokens, res.AllToolsTokens) + ")"
	}
	usage := usageText(res.Usage)
	unreported := 0
	for _, s := range res.Steps {
		if s.Usage.PromptTokens == 0 && s.Usage.CompletionTokens == 0 {
			unreported++
		}
	}
	if unreported > 0 && unreported < len(res.Steps) {
		usage += fmt.Sprintf(" (%d of %d steps not reported)", unreported, len(res.Steps))
	}
	fmt.Fprintf(w, "\n%s · tool tokens offered %d vs %d for all tools%s · usage: %s · %.1fs\n",
		runPlural(len(res.Steps), "step"), res.ToolTokens, res.AllToolsTokens, saved, usage, elapsed.Seconds())
	prompt := res.CacheableTokens + res.UncachedTokens
	share := 0.0
	if prompt > 0 {
		share = 100 * float64(res.CacheableTokens) / float64(prompt)
	}
	fmt.Fprintf(w, "prompt: %d cacheable + %d uncached tokens (%.0f%% cacheable) · tool list changed at %d of %d steps · estimated cost $%.5f (%s)",
		res.CacheableTokens, res.UncachedTokens, share, res.ToolListChanges, max(len(res.Steps)-1, 0), res.EstimatedCost, p.prices)
	if res.ReportedCost > 0 {
		fmt.Fprintf(w, " · $%.5f by the provider's usage", res.ReportedCost)
	}
	fmt.Fprintln(w)
}

// cacheText is a step's PromptCache on one line: cacheable and uncached
// tokens, whether the tool list changed, and what was evicted and why.
func cacheText(pc agent.PromptCache, step int) string {
	s := fmt.Sprintf("%d cacheable + %d uncached tokens", pc.CacheableTokens, pc.UncachedTokens)
	switch {
	case step > 1 && pc.ToolsChanged:
		s += " · tool list changed"
	case step > 1:
		s += " · tool list unchanged"
	}
	if len(pc.Evicted) > 0 {
		parts := make([]string, len(pc.Evicted))
		for i, e := range pc.Evicted {
			parts[i] = fmt.Sprintf("%s (%s, %d tokens)", e.Name, e.Reason, e.Tokens)
		}
		s += " · evicted " + strings.Join(parts, ", ")
	}
	return s
}

// writeOffered prints a step's tools as a table, best score first (ties by
// name), each column as wide as its widest cell: names are never cut. The
// search_tools meta-tool is not ranked (its score only ranks it for the
// budget): it comes last, with no score shown.
func writeOffered(w io.Writer, offered []agent.OfferedTool) {
	rows := slices.Clone(offered)
	slices.SortFunc(rows, func(a, b agent.OfferedTool) int {
		if ma, mb := a.Reason == think.ReasonMeta, b.Reason == think.ReasonMeta; ma != mb {
			if ma {
				return 1
			}
			return -1
		}
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	cells := [][]string{{"TOOL", "SCORE", "TOKENS", "TIER", "WHY"}}
	for _, o := range rows {
		score := fmt.Sprintf("%.2f", o.Score)
		if o.Reason == think.ReasonMeta {
			score = "-"
		}
		cells = append(cells, []string{o.Name, score, strconv.Itoa(o.Tokens), o.Tier.String(), o.Reason})
	}
	width := make([]int, len(cells[0]))
	for _, row := range cells {
		for i, c := range row {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	numeric := []bool{false, true, true, false, false} // right-aligned
	for _, row := range cells {
		line := make([]string, len(row))
		for i, c := range row {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if numeric[i] {
				line[i] = pad + c
			} else {
				line[i] = c + pad
			}
		}
		fmt.Fprintln(w, strings.TrimRight("  "+strings.Join(line, "  "), " "))
	}
}

// usageText is a provider's usage, or "not reported" when it sent none (a
// model call always has prompt tokens).
func usageText(u agent.Usage) string {
	if u.PromptTokens == 0 && u.CompletionTokens == 0 {
		return "not reported"
	}
	s := fmt.Sprintf("%d prompt + %d completion tokens", u.PromptTokens, u.CompletionTokens)
	if u.CachedPromptTokens > 0 {
		s = fmt.Sprintf("%d prompt (%d cached) + %d completion tokens", u.PromptTokens, u.CachedPromptTokens, u.CompletionTokens)
	}
	return s
}

// runLine squeezes s onto one line of at most n runes.
func runLine(s string, n int) string {
	s = termsafe.String(strings.Join(strings.Fields(s), " "))
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// runPlural returns "1 tool", "2 tools".
func runPlural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// percentLess says how much smaller part is than all, never rounding a
// saving that is not total to "100% less" (or a real one to "0% less").
func percentLess(part, all int) string {
	p := 100 * (1 - float64(part)/float64(all))
	switch {
	case part == 0:
		return "100% less"
	case part == all:
		return "0% less"
	case p > 99.9:
		return fmt.Sprintf("%.2f%% less", min(p, 99.99))
	case p >= 99:
		return fmt.Sprintf("%.1f%% less", p)
	case p < 0:
		return fmt.Sprintf("%.0f%% more", -p)
	}
	return fmt.Sprintf("%.0f%% less", max(p, 1))
}

// terminalApprover asks on stderr and reads y/N answers from stdin, one
// question at a time (calls of one step may ask concurrently). The
// question shows every key of the arguments; a long value is folded, the
// question says how many bytes that hides, and "s" shows them all before
// asking again (issue 35: a cut at 200 characters let keys after it be
// approved unseen).
func terminalApprover(e *env) func(context.Context, tool.Tool, json.RawMessage) (bool, error) {
	var mu sync.Mutex
	var in *bufio.Reader
	if e.stdin != nil {
		in = bufio.NewReader(e.stdin)
	}
	return func(_ context.Context, t tool.Tool, args json.RawMessage) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		full := approvalArgs(args)
		shown, elided := foldLines(full, approvalLine)
		fmt.Fprintf(e.stderr, "allow %s with arguments\n%s\n", termsafe.String(t.Name), shown)
		for {
			if elided > 0 {
				fmt.Fprintf(e.stderr, "(%d bytes of long values folded above; s shows them all) allow %s? [y/N/s] ", elided, termsafe.String(t.Name))
			} else {
				fmt.Fprintf(e.stderr, "allow %s? [y/N] ", termsafe.String(t.Name))
			}
			if in == nil {
				fmt.Fprintln(e.stderr, "(no input: denied)")
				return false, nil
			}
			line, err := in.ReadString('\n')
			if err != nil && line == "" {
				fmt.Fprintln(e.stderr, "(no input: denied)")
				return false, nil
			}
			switch answer := strings.ToLower(strings.TrimSpace(line)); {
			case (answer == "s" || answer == "show") && elided > 0:
				fmt.Fprintf(e.stderr, "%s\n", full)
				elided = 0
			default:
				return answer == "y" || answer == "yes", nil
			}
		}
	}
}

// approvalLine is the length (runes) past which a line of the arguments
// is folded in an approval question.
const approvalLine = 300

// approvalArgs returns args as indented JSON (one key per line), escaped
// for the terminal; arguments that are not JSON as they are, escaped.
func approvalArgs(args json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Indent(&b, args, "  ", "  "); err != nil {
		return "  " + termsafe.String(string(args))
	}
	return "  " + termsafe.String(b.String())
}

// foldLines cuts each line of s longer than n runes to its first n and
// says how many bytes it hid; it returns the text and the bytes hidden.
func foldLines(s string, n int) (string, int) {
	lines := strings.Split(s, "\n")
	hidden := 0
	for i, l := range lines {
		if r := []rune(l); len(r) > n {
			head := string(r[:n])
			cut := len(l) - len(head)
			hidden += cut
			lines[i] = fmt.Sprintf("%s… [%d more bytes]", head, cut)
		}
	}
	return strings.Join(lines, "\n"), hidden
}

package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolsift/toolsift/agent"
	"github.com/toolsift/toolsift/budget"
	"github.com/toolsift/toolsift/internal/agenttest"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
)

// with returns catalog() with the handlers of the named tools replaced.
func with(handlers map[string]func(context.Context, json.RawMessage) (string, error)) []spec {
	specs := catalog()
	for i := range specs {
		if h, ok := handlers[specs[i].name]; ok {
			specs[i].handler = h
		}
	}
	return specs
}

func weather(_ context.Context, args json.RawMessage) (string, error) {
	var a struct{ City string }
	if err := json.Unmarshal(args, &a); err != nil {
		return "", err
	}
	return a.City + ": sunny, 21°C", nil
}

func calls(cs ...string) []tool.ToolCall {
	var out []tool.ToolCall
	for i := 0; i+1 < len(cs); i += 2 {
		out = append(out, tool.ToolCall{Name: cs[i], Arguments: cs[i+1]})
	}
	return out
}

// TestRun runs scripted conversations against the real tool stack, once
// with JSON responses and once streamed with argument deltas of 2 bytes
// (split mid-JSON) and parallel calls interleaved, and checks the tools
// offered at every step, what the tools received and what the model was
// told.
func TestRun(t *testing.T) {
	// Every call waits for the other two: this only passes when the three
	// calls of the step run at the same time. Each subtest starts afresh.
	var (
		mu      sync.Mutex
		arrived int
		all     chan struct{} // closed when the third call arrives
	)
	barrier := func(ctx context.Context, args json.RawMessage) (string, error) {
		mu.Lock()
		arrived++
		three := all
		if arrived == 3 {
			close(all)
		}
		mu.Unlock()
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-three:
		}
		return weather(ctx, args)
	}
	const task = "What is the weather in Bern?"
	tests := []struct {
		name    string
		specs   []spec
		opts    agent.Options
		task    string
		replies []agenttest.Reply
		// wantIncludes are tools each request must offer. The whole list is
		// checked by checkSteps against the retriever's ranking.
		wantIncludes [][]string
		// wantFound are tools each step must offer because search_tools
		// found them or they are close matches of an unknown name.
		wantFound [][]string
		// wantUnoffered are the calls to tools not offered at their step.
		wantUnoffered []string
		// wantOutcomes are each step's call outcomes.
		wantOutcomes [][]agent.Outcome
		// wantHandled are the calls the tools received, sorted.
		wantHandled []call
		// wantObservations are substrings of the tool messages of the last
		// request, in order.
		wantObservations []string
		wantAnswer       string
		wantErr          error
		wantUsed         []string
	}{
		{
			name:  "single tool call",
			specs: with(map[string]func(context.Context, json.RawMessage) (string, error){"get_weather": weather}),
			task:  task,
			replies: []agenttest.Reply{
				{ToolCalls: calls("t__get_weather", `{"city":"Bern"}`)},
				{Content: "It is sunny in Bern."},
			},
			wantIncludes:     [][]string{{"t__get_weather"}, {"t__get_weather"}},
			wantOutcomes:     [][]agent.Outcome{{agent.OutcomeOK}, nil},
			wantHandled:      []call{{"get_weather", `{"city":"Bern"}`}},
			wantObservations: []string{"Bern: sunny, 21°C"},
			wantAnswer:       "It is sunny in Bern.",
			wantUsed:         []string{"t__get_weather"},
		},
		{
			name:  "parallel calls",
			specs: with(map[string]func(context.Context, json.RawMessage) (string, error){"get_weather": barrier}),
			opts:  agent.Options{MaxParallel: 3, ToolTimeout: waitLimit()},
			task:  "What is the weather in Bern, Zürich and Genève?",
			replies: []agenttest.Reply{
				{ToolCalls: calls("t__get_weather", `{"city":"Bern"}`, "t__get_weather", `{"city":"Zürich"}`, "t__get_weather", `{"city":"Genève"}`)},
				{Content: "Sunny everywhere."},
			},
			wantIncludes: [][]string{{"t__get_weather"}, {"t__get_weather"}},
			wantOutcomes: [][]agent.Outcome{{agent.OutcomeOK, agent.OutcomeOK, agent.OutcomeOK}, nil},
			wantHandled: []call{
				{"get_weather", `{"city":"Bern"}`}, {"get_weather", `{"city":"Genève"}`}, {"get_weather", `{"city":"Zürich"}`},
			},
			wantObservations: []string{"Bern: sunny", "Zürich: sunny", "Genève: sunny"},
			wantAnswer:       "Sunny everywhere.",
			wantUsed:         []string{"t__get_weather"},
		},
		{
			name:  "tool not offered but in the catalog runs and stays",
			specs: catalog(),
			task:  task,
			replies: []agenttest.Reply{
				{ToolCalls: calls("t__play_music", `{"query":"sunshine"}`)},
				{Content: "Playing."},
			},
			wantIncludes:     [][]string{{"t__get_weather"}, {"t__play_music"}},
			wantUnoffered:    []string{"t__play_music"},
			wantOutcomes:     [][]agent.Outcome{{agent.OutcomeOK}, nil},
			wantHandled:      []call{{"play_music", `{"query":"sunshine"}`}},
			wantObservations: []string{"play_music ok"},
			wantAnswer:       "Playing.",
			wantUsed:         []string{"t__play_music"},
		},
		{
			name:  "hallucinated tool name gets close matches",
			specs: with(map[string]func(context.Context, json.RawMessage) (string, error){"get_weather": weather}),
			task:  task,
			replies: []agenttest.Reply{
				{ToolCalls: calls("t__weather_now", `{"city":"Bern"}`)},
				{ToolCalls: calls("t__get_weather", `{"city":"Bern"}`)},
				{Content: "Sunny."},
			},
			wantIncludes:     [][]string{{"t__get_weather"}, {"t__get_weather"}, {"t__get_weather"}},
			wantFound:        [][]string{nil, {"t__get_weather"}, nil},
			wantUnoffered:    []string{"t__weather_now"},
			wantOutcomes:     [][]agent.Outcome{{agent.OutcomeUnknownTool}, {agent.OutcomeOK}, nil},
			wantHandled:      []call{{"get_weather", `{"city":"Bern"}`}},
			wantObservations: []string{`no tool named "t__weather_now"`, "Bern: sunny"},
			wantAnswer:       "Sunny.",
			wantUsed:         []string{"t__get_weather"},
		},
		{
			name:  "tool names as some models write them",
			specs: with(map[string]func(context.Context, json.RawMessage) (string, error){"get_weather": weather}),
			task:  task,
			replies: []agenttest.Reply{
				{ToolCalls: calls("functions.t__get_weather", `{"city":"Bern"}`, " t__get_forecast ", `{"city":"Bern"}`)},
				{Content: "Sunny."},
			},
			wantIncludes:     [][]string{{"t__get_weather", "t__get_forecast"}, {"t__get_weather", "t__get_forecast"}},
			wantOutcomes:     [][]agent.Outcome{{agent.OutcomeOK, agent.OutcomeOK}, nil},
			wantHandled:      []call{{"get_forecast", `{"city":"Bern"}`}, {"get_weather", `{"city":"Bern"}`}},
			wantObservations: []string{"Bern: sunny", "get_forecast ok"},
			wantAnswer:       "Sunny.",
			wantUsed:         []string{"t__get_weather", "t__get_forecast"},
		},
		{
			name:  "bad arguments are observations",
			specs: catalog(),
			task:  task,
			replies: []agenttest.Reply{
				{ToolCalls: calls("t__get_weather", `{"city":`, "t__get_weather", `["Bern"]`, "t__list_emails", ``)},
				{Content: "Sorry."},
			},
			wantIncludes:     [][]string{{"t__get_weather"}, {"t__get_weather", "t__list_emails"}},
			wantUnoffered:    []string{"t__list_emails"},
			wantOutcomes:     [][]agent.Outcome{{agent.OutcomeInvalidArgs, agent.OutcomeInvalidArgs, agent.OutcomeOK}, nil},
			wantHandled:      []call{{"list_emails", `{}`}},
			wantObservations: []string{"not valid JSON", "arguments are not a JSON object: got", "list_emails ok"},
			wantAnswer:       "Sorry.",
			wantUsed:         []string{"t__get_weather", "t__list_emails"},
		},
		{
			name: "a tool that errors",
			specs: with(map[string]func(context.Context, json.RawMessage) (string, error){"get_weather": func(context.Context, json.RawMessage) (string, error) {
				return "", errors.New("weather service is down")
			}}),
			task: task,
			replies: []agenttest.Reply{
				{ToolCalls: calls("t__get_weather", `{"city":"Bern"}`)},
				{Content: "The weather service is down."},
			},
			wantIncludes:     [][]string{{"t__get_weather"}, {"t__get_weather"}},
			wantOutcomes:     [][]agent.Outcome{{agent.OutcomeToolError}, nil},
			wantHandled:      []call{{"get_weather", `{"city":"Bern"}`}},
			wantObservations: []string{"error: weather service is down"},
			wantAnswer:       "The weather service is down.",
			wantUsed:         []string{"t__get_weather"},
		},
		{
			name: "a tool that hangs is cancelled at its timeout",
			specs: with(map[string]func(context.Context, json.RawMessage) (string, error){"get_weather": func(ctx context.Context, _ json.RawMessage) (string, error) {
				<-ctx.Done()
				return "", ctx.Err()
			}}),
			opts: agent.Options{ToolTimeout: time.Second},
			task: task,
			replies: []agenttest.Reply{
				{ToolCalls: calls("t__get_weather", `{"city":"Bern"}`, "t__get_forecast", `{"city":"Bern"}`)},
				{Content: "Forecast only."},
			},
			wantIncludes:     [][]string{{"t__get_weather", "t__get_forecast"}, {"t__get_weather", "t__get_forecast"}},
			wantOutcomes:     [][]agent.Outcome{{agent.OutcomeTimeout, agent.OutcomeOK}, nil},
			wantHandled:      []call{{"get_forecast", `{"city":"Bern"}`}, {"get_weather", `{"city":"Bern"}`}},
			wantObservations: []string{"t__get_weather did not answer within 1s", "get_forecast ok"},
			wantAnswer:       "Forecast only.",
			wantUsed:         []string{"t__get_weather", "t__get_forecast"},
		},
		{
			name:  "search_tools results join the next step",
			specs: catalog(),
			task:  task,
			replies: []agenttest.Reply{
				{ToolCalls: calls("search_tools", `{"query":"play a song on the speakers","k":2}`)},
				{ToolCalls: calls("t__play_music", `{"query":"Here Comes the Sun"}`)},
				{Content: "Playing."},
			},
			wantIncludes:     [][]string{{"t__get_weather"}, {"t__play_music"}, {"t__play_music"}},
			wantFound:        [][]string{nil, {"t__play_music"}, nil},
			wantOutcomes:     [][]agent.Outcome{{agent.OutcomeSearch}, {agent.OutcomeOK}, nil},
			wantHandled:      []call{{"play_music", `{"query":"Here Comes the Sun"}`}},
			wantObservations: []string{`{"tools":[{"name":"t__play_music"`, "play_music ok"},
			wantAnswer:       "Playing.",
			wantUsed:         []string{"t__play_music"},
		},
		{
			name:  "max steps",
			specs: catalog(),
			opts:  agent.Options{MaxSteps: 2},
			task:  task,
			replies: []agenttest.Reply{
				{ToolCalls: calls("t__get_weather", `{"city":"Bern"}`)},
				{ToolCalls: calls("t__get_weather", `{"city":"Bern"}`)},
			},
			wantIncludes:     [][]string{{"t__get_weather"}, {"t__get_weather"}},
			wantOutcomes:     [][]agent.Outcome{{agent.OutcomeOK}, {agent.OutcomeOK}},
			wantHandled:      []call{{"get_weather", `{"city":"Bern"}`}, {"get_weather", `{"city":"Bern"}`}},
			wantObservations: []string{"get_weather ok"},
			wantErr:          agent.ErrMaxSteps,
			wantUsed:         []string{"t__get_weather"},
		},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tt.name, stream), func(t *testing.T) {
				mu.Lock()
				arrived, all = 0, make(chan struct{})
				mu.Unlock()
				f := newFixture(t, tt.specs, 3)
				replies := slices.Clone(tt.replies)
				for i := range replies {
					replies[i].ChunkSize, replies[i].Interleave = 2, true
				}
				srv := agenttest.NewServer(replies...)
				defer srv.Close()
				opts := tt.opts
				a := newAgent(t, srv, f, stream, &opts)

				res, err := a.Run(context.Background(), tt.task)
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Run error = %v, want %v", err, tt.wantErr)
				}
				steps := checkSteps(t, f, srv, res, true)
				for i, want := range tt.wantIncludes {
					if i >= len(steps) {
						t.Errorf("step %d: missing, want it to offer %q", i+1, want)
						continue
					}
					for _, name := range want {
						if !slices.Contains(steps[i].names, name) {
							t.Errorf("step %d offers %q, want it to include %s", i+1, steps[i].names, name)
						}
					}
				}
				if len(tt.wantIncludes) != len(res.Steps) {
					t.Errorf("%d steps, want %d", len(res.Steps), len(tt.wantIncludes))
				}
				for i, want := range tt.wantFound {
					for _, name := range want {
						if i >= len(steps) || !slices.Contains(steps[i].found, name) {
							t.Errorf("step %d: %s not offered as found", i+1, name)
						}
					}
				}
				for i := range steps {
					if len(steps[i].found) > 0 && (i >= len(tt.wantFound) || len(tt.wantFound[i]) == 0) {
						t.Errorf("step %d: unexpected found tools %q", i+1, steps[i].found)
					}
				}
				var unoffered []string
				for _, st := range res.Steps {
					for _, c := range st.Calls {
						if !c.Offered {
							unoffered = append(unoffered, c.Name)
						}
					}
				}
				if diff := cmp.Diff(tt.wantUnoffered, unoffered); diff != "" {
					t.Errorf("calls to tools not offered (-want +got):\n%s", diff)
				}
				var outcomes [][]agent.Outcome
				for _, st := range res.Steps {
					var o []agent.Outcome
					for _, c := range st.Calls {
						o = append(o, c.Outcome)
					}
					outcomes = append(outcomes, o)
				}
				if diff := cmp.Diff(tt.wantOutcomes, outcomes); diff != "" {
					t.Errorf("outcomes per step (-want +got):\n%s", diff)
				}
				handled := f.Calls()
				slices.SortFunc(handled, func(a, b call) int { return strings.Compare(a.Tool+a.Args, b.Tool+b.Args) })
				if diff := cmp.Diff(tt.wantHandled, handled, cmp.AllowUnexported(call{})); diff != "" {
					t.Errorf("calls received by the tools (-want +got):\n%s", diff)
				}
				if res.Answer != tt.wantAnswer {
					t.Errorf("answer %q, want %q", res.Answer, tt.wantAnswer)
				}
				if diff := cmp.Diff(tt.wantUsed, res.Used); diff != "" {
					t.Errorf("used (-want +got):\n%s", diff)
				}
				checkObservations(t, srv, res, tt.wantObservations)
				checkTranscript(t, res)
			})
		}
	}
}

// checkObservations checks the tool messages the model got last (or, when
// the run ended on tool calls, the transcript's last tool messages).
func checkObservations(t *testing.T, srv *agenttest.Server, res *agent.Result, want []string) {
	t.Helper()
	reqs := srv.Requests()
	var got []tool.Message
	for _, r := range reqs {
		got = append(got, toolMessages(r)...)
	}
	if len(reqs) == len(res.Steps) && len(res.Steps) > 0 && res.Answer == "" {
		got = toolMessages(agenttest.Request{Messages: res.Messages})
	}
	// Each wanted text must appear in a distinct tool message, in order.
	i := 0
	for _, m := range got {
		if i < len(want) && strings.Contains(m.Content, want[i]) {
			i++
		}
	}
	if i < len(want) {
		var contents []string
		for _, m := range got {
			contents = append(contents, m.Content)
		}
		t.Errorf("tool messages sent %q\ndo not contain, in order, %q", contents, want)
	}
}

// checkTranscript checks that every tool call of the transcript is answered
// right after it, in order, and that steps and messages agree.
func checkTranscript(t *testing.T, res *agent.Result) {
	t.Helper()
	msgs := res.Messages
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		if m.Role != tool.RoleAssistant {
			continue
		}
		for j, c := range m.ToolCalls {
			k := i + 1 + j
			if k >= len(msgs) || msgs[k].Role != tool.RoleTool || msgs[k].ToolCallID != c.ID {
				t.Fatalf("message %d: call %s (%s) is not answered at message %d", i, c.ID, c.Name, k)
			}
		}
	}
	var usage agent.Usage
	tokens, all := 0, 0
	for _, st := range res.Steps {
		usage = usage.Add(st.Usage)
		tokens += st.ToolTokens
		all += st.AllToolsTokens
		sum := 0
		for _, o := range st.Offered {
			sum += o.Tokens
		}
		if sum != st.ToolTokens {
			t.Errorf("step %d: ToolTokens %d, offered tools sum to %d", st.N, st.ToolTokens, sum)
		}
		if st.Usage.PromptTokens == 0 {
			t.Errorf("step %d: no prompt tokens reported", st.N)
		}
	}
	if usage != res.Usage || tokens != res.ToolTokens || all != res.AllToolsTokens {
		t.Errorf("result totals %+v %d %d, steps sum to %+v %d %d", res.Usage, res.ToolTokens, res.AllToolsTokens, usage, tokens, all)
	}
}

// TestRunAccounting checks the per-step token accounting against the
// budget package: offered tools cost what CountTool says, within the budget,
// and the catalog's full cost is the sum over every tool.
func TestRunAccounting(t *testing.T) {
	f := newFixtureWith(t, catalog(), think.Options{Budget: 300, Search: think.SearchNever, Retrieval: retrieval.Options{K: 3}})
	srv := agenttest.NewServer(agenttest.Reply{ToolCalls: calls("t__get_weather", `{"city":"Bern"}`)}, agenttest.Reply{Content: "ok"})
	defer srv.Close()
	tk := tokenizer(t)
	a := newAgent(t, srv, f, false, nil)
	res, err := a.Run(context.Background(), "What is the weather in Bern?")
	if err != nil {
		t.Fatal(err)
	}
	all := 0
	for tool := range f.Index.All() {
		r, err := tk.CountTool(tool, budget.TierFull)
		if err != nil {
			t.Fatal(err)
		}
		all += r.Tokens
	}
	reqs := srv.Requests()
	for i, st := range res.Steps {
		if st.AllToolsTokens != all || st.AllTools != len(catalog()) {
			t.Errorf("step %d: all tools %d tokens / %d tools, want %d / %d", st.N, st.AllToolsTokens, st.AllTools, all, len(catalog()))
		}
		if st.ToolTokens > 300 || st.ToolTokens == 0 {
			t.Errorf("step %d: %d tool tokens, want 1..300", st.N, st.ToolTokens)
		}
		// What was sent is what was counted.
		for j, o := range st.Offered {
			def := reqs[i].Tools[j]
			tool, _ := f.Index.Get(o.Name)
			r, err := tk.CountTool(tool, o.Tier)
			if err != nil {
				t.Fatal(err)
			}
			if def.Name != o.Name || def.Description != r.Description || !jsonEqual(def.Parameters, r.Parameters) || r.Tokens != o.Tokens {
				t.Errorf("step %d tool %d: sent %+v, want %s at tier %v (%d tokens)", st.N, j, def, o.Name, o.Tier, r.Tokens)
			}
			if slices.Contains(reqs[i].ToolNames(), think.SearchToolName) {
				t.Errorf("step %d: search_tools offered with SearchNever", st.N)
			}
		}
	}
}

// TestRunCancel cancels a run while the model is thinking and while a tool
// runs: Run returns ctx's error with the transcript so far, every call
// answered.
func TestRunCancel(t *testing.T) {
	t.Run("during the model call", func(t *testing.T) {
		f := newFixture(t, catalog(), 3)
		asked := make(chan struct{})
		var once sync.Once
		srv := agenttest.NewServerFunc(func(agenttest.Request) agenttest.Reply {
			once.Do(func() { close(asked) })
			return agenttest.Reply{Hang: true}
		})
		defer srv.Close()
		a := newAgent(t, srv, f, true, nil)
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			<-asked // the model is thinking
			cancel()
		}()
		res, err := a.Run(ctx, "What is the weather in Bern?")
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if len(res.Steps) != 1 || len(res.Steps[0].Offered) == 0 || len(res.Messages) != 2 {
			t.Errorf("partial result: %d steps, %d messages; want 1 step with its tools, 2 messages", len(res.Steps), len(res.Messages))
		}
	})
	t.Run("during a tool call", func(t *testing.T) {
		started := make(chan struct{})
		f := newFixture(t, with(map[string]func(context.Context, json.RawMessage) (string, error){"get_weather": func(ctx context.Context, _ json.RawMessage) (string, error) {
			close(started)
			<-ctx.Done()
			return "", ctx.Err()
		}}), 3)
		srv := agenttest.NewServer(agenttest.Reply{ToolCalls: calls("t__get_weather", `{"city":"Bern"}`)})
		defer srv.Close()
		a := newAgent(t, srv, f, false, nil)
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			<-started
			cancel()
		}()
		res, err := a.Run(ctx, "What is the weather in Bern?")
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if len(res.Steps) != 1 || len(res.Steps[0].Calls) != 1 || res.Steps[0].Calls[0].Outcome != agent.OutcomeCancelled {
			t.Fatalf("steps %+v, want one step with a cancelled call", res.Steps)
		}
		checkTranscript(t, res)
	})
}

// TestContinue continues a conversation: the earlier turn is sent again and
// its tools stay sticky.
func TestContinue(t *testing.T) {
	f := newFixture(t, with(map[string]func(context.Context, json.RawMessage) (string, error){"get_weather": weather}), 3)
	srv := agenttest.NewServer(
		agenttest.Reply{ToolCalls: calls("t__get_weather", `{"city":"Bern"}`)},
		agenttest.Reply{Content: "Sunny in Bern."},
		agenttest.Reply{ToolCalls: calls("t__send_email", `{"to":"bob@example.com","subject":"Weather","body":"Sunny in Bern."}`)},
		agenttest.Reply{Content: "Sent."},
	)
	defer srv.Close()
	a := newAgent(t, srv, f, false, nil)
	first, err := a.Run(context.Background(), "What is the weather in Bern?")
	if err != nil {
		t.Fatal(err)
	}
	n := len(first.Messages)
	second, err := a.Continue(context.Background(), first, "Email that to bob@example.com.")
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Messages) != n {
		t.Errorf("Continue changed the earlier result")
	}
	if second.Answer != "Sent." || len(second.Steps) != 2 {
		t.Errorf("answer %q after %d steps, want Sent. after 2", second.Answer, len(second.Steps))
	}
	if diff := cmp.Diff(first.Messages, second.Messages[:n]); diff != "" {
		t.Errorf("continued transcript does not start with the first (-want +got):\n%s", diff)
	}
	checkSteps(t, f, srv, &agent.Result{Steps: append(slices.Clone(first.Steps), second.Steps...)}, true)
	// The continued turn keeps get_weather (sticky) and brings email tools.
	for _, name := range []string{"t__get_weather", "t__send_email"} {
		if !slices.Contains(srv.Requests()[2].ToolNames(), name) {
			t.Errorf("first step of the continued turn offers %q, want %s in it", srv.Requests()[2].ToolNames(), name)
		}
	}
	if q := second.Steps[0].Query; q.Task != "Email that to bob@example.com." || !slices.Equal(q.Used, []string{"t__get_weather"}) {
		t.Errorf("first query of the continued turn: %+v", q)
	}
	if diff := cmp.Diff([]string{"t__get_weather", "t__send_email"}, second.Used); diff != "" {
		t.Errorf("used (-want +got):\n%s", diff)
	}
}

// TestEvents checks the event stream and the log records of a run.
func TestEvents(t *testing.T) {
	f := newFixture(t, catalog(), 3)
	srv := agenttest.NewServer(
		agenttest.Reply{ToolCalls: calls("t__get_weather", `{"city":"Bern"}`, "t__get_forecast", `{"city":"Bern"}`)},
		agenttest.Reply{Content: "ok"},
	)
	defer srv.Close()
	var ev events
	var logs bytes.Buffer
	a := newAgent(t, srv, f, false, &agent.Options{
		MaxParallel: 1, // one call after the other: a deterministic order
		OnEvent:     ev.add,
		Logger:      slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if _, err := a.Run(context.Background(), "What is the weather in Bern?"); err != nil {
		t.Fatal(err)
	}
	want := []string{"1:think", "1:model", "1:tool_call", "1:tool_result", "1:tool_call", "1:tool_result", "2:think", "2:model", "2:answer"}
	if diff := cmp.Diff(want, ev.kinds()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	think := ev.all[0]
	if think.Query.Task != "What is the weather in Bern?" || len(think.Offered) == 0 || think.ToolTokens == 0 || think.AllToolsTokens <= think.ToolTokens {
		t.Errorf("think event: %+v", think)
	}
	if m := ev.all[1]; len(m.Message.ToolCalls) != 2 || m.Usage.PromptTokens == 0 {
		t.Errorf("model event: %+v", m)
	}
	if r := ev.all[3]; r.Call.Name != "t__get_weather" || r.Call.Outcome != agent.OutcomeOK || r.Call.Tokens == 0 {
		t.Errorf("tool result event: %+v", r)
	}
	var msgs []string
	for line := range strings.Lines(logs.String()) {
		var rec struct{ Msg string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		msgs = append(msgs, rec.Msg)
	}
	wantLogs := []string{"agent think", "agent model", "agent tool call", "agent tool result", "agent tool call", "agent tool result", "agent think", "agent model", "agent answer"}
	if diff := cmp.Diff(wantLogs, msgs); diff != "" {
		t.Errorf("log records (-want +got):\n%s", diff)
	}
}

// TestObservationBudget checks that a long result is cut to the budget
// before the model sees it.
func TestObservationBudget(t *testing.T) {
	long := strings.Repeat("All work and no play makes Jack a dull boy.\n", 200)
	f := newFixture(t, with(map[string]func(context.Context, json.RawMessage) (string, error){"read_file": func(context.Context, json.RawMessage) (string, error) {
		return long, nil
	}}), 3)
	srv := agenttest.NewServer(agenttest.Reply{ToolCalls: calls("t__read_file", `{"path":"jack.txt"}`)}, agenttest.Reply{Content: "ok"})
	defer srv.Close()
	a := newAgent(t, srv, f, false, &agent.Options{ObservationBudget: 50})
	res, err := a.Run(context.Background(), "Read jack.txt")
	if err != nil {
		t.Fatal(err)
	}
	c := res.Steps[0].Calls[0]
	tk := tokenizer(t)
	if c.Tokens > 50 || c.RawTokens != tk.Count(long) || !strings.Contains(c.Observation, "truncated") {
		t.Errorf("call: %d tokens of %d, observation %q", c.Tokens, c.RawTokens, c.Observation)
	}
	if got := toolMessages(srv.Requests()[1])[0].Content; got != c.Observation {
		t.Errorf("model got %q, want the truncated observation", got)
	}
}

func TestNewRejects(t *testing.T) {
	f := newFixture(t, catalog()[:2], 0)
	m := newOpenAI(t, "http://127.0.0.1:1", false)
	tests := []struct {
		name  string
		model agent.Model
		tools agent.Tools
		opts  *agent.Options
	}{
		{"nil model", nil, f.Tools(), nil},
		{"nil tools", m, nil, nil},
		{"negative observation budget", m, f.Tools(), &agent.Options{ObservationBudget: -1}},
		{"negative max steps", m, f.Tools(), &agent.Options{MaxSteps: -1}},
		{"negative tool timeout", m, f.Tools(), &agent.Options{ToolTimeout: -1}},
		{"negative parallelism", m, f.Tools(), &agent.Options{MaxParallel: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := agent.New(tt.model, tt.tools, tt.opts); !errors.Is(err, agent.ErrOptions) {
				t.Errorf("err = %v, want ErrOptions", err)
			}
		})
	}
}

// TestRunMaxParallel checks that no more than MaxParallel calls of a step
// run at once.
func TestRunMaxParallel(t *testing.T) {
	var running, peak atomic.Int32
	slow := func(ctx context.Context, args json.RawMessage) (string, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		// Long enough for calls beyond MaxParallel to overlap, were they
		// started: no event says that the agent starts no more.
		time.Sleep(time.Millisecond)
		return weather(ctx, args)
	}
	f := newFixture(t, with(map[string]func(context.Context, json.RawMessage) (string, error){"get_weather": slow}), 3)
	srv := agenttest.NewServer(
		agenttest.Reply{ToolCalls: calls("t__get_weather", `{"city":"A"}`, "t__get_weather", `{"city":"B"}`, "t__get_weather", `{"city":"C"}`, "t__get_weather", `{"city":"D"}`, "t__get_weather", `{"city":"E"}`)},
		agenttest.Reply{Content: "ok"},
	)
	defer srv.Close()
	a := newAgent(t, srv, f, false, &agent.Options{MaxParallel: 2})
	res, err := a.Run(context.Background(), "Weather in A, B, C, D and E?")
	if err != nil {
		t.Fatal(err)
	}
	if p := peak.Load(); p > 2 || p < 1 {
		t.Errorf("%d calls ran at once, want 1..2", p)
	}
	var got []string
	for _, c := range res.Steps[0].Calls {
		got = append(got, c.Observation)
	}
	want := []string{"A: sunny, 21°C", "B: sunny, 21°C", "C: sunny, 21°C", "D: sunny, 21°C", "E: sunny, 21°C"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("observations, in call order (-want +got):\n%s", diff)
	}
}

// TestRunBudget checks how the tool budget bounds each step.
func TestRunBudget(t *testing.T) {
	t.Run("too small for any tool", func(t *testing.T) {
		// No tool fits; only the clear first match is offered, beyond the
		// budget (think's rule for oversized tools), and nothing else.
		f := newFixtureWith(t, catalog(), think.Options{Budget: 5, Retrieval: retrieval.Options{K: 3}})
		srv := agenttest.NewServer(agenttest.Reply{Content: "ok"})
		defer srv.Close()
		a := newAgent(t, srv, f, false, nil)
		if _, err := a.Run(context.Background(), "What is the weather in Bern?"); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([][]string{{"t__get_weather"}}, srv.OfferedTools()); diff != "" {
			t.Errorf("offered (-want +got):\n%s", diff)
		}
	})
	t.Run("too small and nothing clearly wanted", func(t *testing.T) {
		f := newFixtureWith(t, catalog(), think.Options{Budget: 5, Retrieval: retrieval.Options{K: 3}})
		srv := agenttest.NewServer()
		defer srv.Close()
		a := newAgent(t, srv, f, false, nil)
		_, err := a.Run(context.Background(), "Do something useful.")
		if !errors.Is(err, budget.ErrBudgetTooSmall) {
			t.Fatalf("err = %v, want ErrBudgetTooSmall", err)
		}
		if n := len(srv.Requests()); n != 0 {
			t.Errorf("%d requests sent, want none", n)
		}
	})
	t.Run("too small for search_tools", func(t *testing.T) {
		f := newFixtureWith(t, catalog(), think.Options{Budget: 50, Search: think.SearchAlways, Retrieval: retrieval.Options{K: 3}})
		srv := agenttest.NewServer(agenttest.Reply{Content: "ok"})
		defer srv.Close()
		a := newAgent(t, srv, f, false, nil)
		res, err := a.Run(context.Background(), "What is the weather in Bern?")
		if err != nil {
			t.Fatal(err)
		}
		if got := srv.OfferedTools(); len(got) != 1 || len(got[0]) == 0 || slices.Contains(got[0], think.SearchToolName) {
			t.Errorf("offered %q, want some tools without search_tools", got)
		}
		if res.Steps[0].ToolTokens > 50 {
			t.Errorf("%d tool tokens, budget 50", res.Steps[0].ToolTokens)
		}
	})
	t.Run("sticky tools compete when they do not all fit", func(t *testing.T) {
		f := newFixtureWith(t, catalog(), think.Options{Budget: 150, Search: think.SearchNever, Retrieval: retrieval.Options{K: 3}})
		var replies []agenttest.Reply
		for _, tool := range []string{"t__send_email", "t__create_event", "t__write_file", "t__create_issue", "t__get_directions"} {
			replies = append(replies, agenttest.Reply{ToolCalls: calls(tool, `{}`)})
		}
		replies = append(replies, agenttest.Reply{Content: "done"})
		srv := agenttest.NewServer(replies...)
		defer srv.Close()
		a := newAgent(t, srv, f, false, nil)
		res, err := a.Run(context.Background(), "Do many things.")
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range res.Steps {
			if st.ToolTokens > 150 {
				t.Errorf("step %d: %d tool tokens, budget 150", st.N, st.ToolTokens)
			}
		}
		if len(res.Used) != 5 {
			t.Errorf("used %q, want 5 tools", res.Used)
		}
	})
}

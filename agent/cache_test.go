package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/agent"
	"github.com/toolsift/toolsift/budget"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/agenttest"
	"github.com/toolsift/toolsift/internal/npmtest"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
)

// taskTool is one tool a scripted task needs: its name, arguments, and
// what the model searches for when it is not offered.
type taskTool struct{ name, args, query string }

// threeTools is the task of issue 21 on the reference servers (the
// Chat Completions and the Responses API tests share it).
var threeTools = []taskTool{
	{"everything__get-sum", `{"a":40,"b":2}`, "add two numbers and return their sum"},
	{"memory__read_graph", `{}`, "read the whole knowledge graph from memory"},
	{"filesystem__list_allowed_directories", `{}`, "list the directories the filesystem server may access"},
}

const threeToolTask = "Add 40 and 2, read the knowledge graph kept in memory, and list the directories you may access. Then tell me the sum."

// scriptedTask is a model that calls each tool of need once: at once when
// it is offered, else after asking search_tools for it (once); a tool
// still not offered after its search is called anyway. When all are
// called it answers with the last number of the first tool's result.
func scriptedTask(need []taskTool) func(agenttest.Request) agenttest.Reply {
	return func(req agenttest.Request) agenttest.Reply {
		called, searched := map[string]bool{}, map[string]bool{}
		firstID := ""
		for _, m := range req.Messages {
			for _, c := range m.ToolCalls {
				if c.Name == think.SearchToolName {
					var a think.SearchArgs
					_ = json.Unmarshal([]byte(c.Arguments), &a)
					searched[a.Query] = true
					continue
				}
				called[c.Name] = true
				if c.Name == need[0].name {
					firstID = c.ID
				}
			}
		}
		offered := map[string]bool{}
		for _, n := range req.ToolNames() {
			offered[n] = true
		}
		var calls []tool.ToolCall
		for _, n := range need {
			switch {
			case called[n.name]:
			case offered[n.name] || searched[n.query] || !offered[think.SearchToolName]:
				calls = append(calls, tool.ToolCall{Name: n.name, Arguments: n.args})
			default:
				args, _ := json.Marshal(think.SearchArgs{Query: n.query})
				calls = append(calls, tool.ToolCall{Name: think.SearchToolName, Arguments: string(args)})
			}
		}
		if len(calls) > 0 {
			return agenttest.Reply{ToolCalls: calls}
		}
		for _, m := range req.Messages {
			if m.Role == tool.RoleTool && m.ToolCallID == firstID {
				nums := regexp.MustCompile(`-?\d+`).FindAllString(m.Content, -1)
				if len(nums) > 0 {
					return agenttest.Reply{Content: nums[len(nums)-1]}
				}
			}
		}
		return agenttest.Reply{Content: "no result"}
	}
}

// wireTools returns the tools of a recorded request as the bytes sent.
func wireTools(t *testing.T, r agenttest.Request) []json.RawMessage {
	t.Helper()
	var body struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	return body.Tools
}

// TestStableThreeToolTask is issue 21's done-when: on the real reference
// servers, with the default (stable) policy, the scripted model calls all
// three tools, answers 42, the tool list changes at most once, and every
// request repeats the one before it byte for byte before appending.
func TestStableThreeToolTask(t *testing.T) {
	dir := npmtest.Dir(t, filepath.Join("..", "upstream", "testdata", "npm"))
	for _, tc := range []struct {
		budget int
		task   string
	}{
		// Every tool the task names is retrieved at the first step.
		{think.DefaultBudget, threeToolTask},
		// A task that names none of them: the model finds them with
		// search_tools, and they join the list.
		{300, "Run the three checks of the morning runbook and tell me the result of the first."},
	} {
		budget := tc.budget
		t.Run(fmt.Sprintf("budget %d", budget), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*waitLimit())
			defer cancel()
			ts, err := toolsift.OpenConfig(ctx, &config.Config{Servers: map[string]config.Server{
				"everything": {Command: "node", Args: []string{npmtest.Entry(dir, "server-everything"), "stdio"}, Timeout: waitLimit()},
				"memory": {Command: "node", Args: []string{npmtest.Entry(dir, "server-memory")}, Timeout: waitLimit(),
					Env: map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}},
				"filesystem": {Command: "node", Args: []string{npmtest.Entry(dir, "server-filesystem"), t.TempDir()}, Timeout: waitLimit()},
			}}, &toolsift.Options{Budget: budget})
			if err != nil {
				t.Fatal(err)
			}
			defer ts.Close()
			for _, n := range threeTools {
				if _, ok := ts.Get(n.name); !ok {
					t.Fatalf("%s is not in the catalog: %+v", n.name, ts.Status())
				}
			}
			srv := agenttest.NewServerFunc(scriptedTask(threeTools))
			defer srv.Close()
			a, err := agent.New(newOpenAI(t, srv.URL, false), ts, &agent.Options{Tokenizer: tokenizer(t)})
			if err != nil {
				t.Fatal(err)
			}
			res, err := a.Run(ctx, tc.task)
			if err != nil {
				t.Fatal(err)
			}
			var ok []string
			for _, st := range res.Steps {
				for _, c := range st.Calls {
					if c.Outcome == agent.OutcomeOK {
						ok = append(ok, c.Name)
					}
				}
			}
			for _, n := range threeTools {
				if !slices.Contains(ok, n.name) {
					t.Errorf("%s was not called successfully; calls that worked: %q", n.name, ok)
				}
			}
			if res.Answer != "42" {
				t.Errorf("answer %q, want 42", res.Answer)
			}

			reqs := srv.Requests()
			changes := 0
			for i := 1; i < len(reqs); i++ {
				prev, cur := wireTools(t, reqs[i-1]), wireTools(t, reqs[i])
				same := len(prev) == len(cur)
				for j := 0; same && j < len(cur); j++ {
					same = bytes.Equal(prev[j], cur[j])
				}
				if !same {
					changes++
					// A stable change appends: the earlier tools stay, byte for byte.
					for j := 0; j < len(prev) && j < len(cur) && len(res.Steps[i].PromptCache.Evicted) == 0; j++ {
						if !bytes.Equal(prev[j], cur[j]) {
							t.Errorf("request %d: tool %d changed without an eviction:\n%s\nwas\n%s", i+1, j, cur[j], prev[j])
							break
						}
					}
				}
				if len(cur) < len(prev) || len(reqs[i].Messages) < len(reqs[i-1].Messages) {
					t.Errorf("request %d is shorter than the one before", i+1)
					continue
				}
				if diff := cmp.Diff(reqs[i-1].Messages, reqs[i].Messages[:len(reqs[i-1].Messages)]); diff != "" {
					t.Errorf("request %d does not only append messages (-before +now):\n%s", i+1, diff)
				}
				if got := res.Steps[i].PromptCache.ToolsChanged; got != !same {
					t.Errorf("step %d: PromptCache.ToolsChanged = %v, the wire says %v", i+1, got, !same)
				}
				if pc, was := res.Steps[i].PromptCache, res.Steps[i-1].PromptCache; same && pc.CacheableTokens != was.PromptTokens {
					t.Errorf("step %d: %d cacheable tokens, want the whole previous prompt (%d) since only messages were appended", i+1, pc.CacheableTokens, was.PromptTokens)
				}
			}
			if changes > 1 {
				t.Errorf("the tool list changed at %d of %d transitions, want at most 1: %q", changes, len(reqs)-1, srv.OfferedTools())
			}
			if res.ToolListChanges != changes {
				t.Errorf("Result.ToolListChanges = %d, the wire shows %d", res.ToolListChanges, changes)
			}
			if res.CacheableTokens == 0 || res.EstimatedCost <= 0 {
				t.Errorf("cacheable %d tokens, estimated cost $%f: want both > 0", res.CacheableTokens, res.EstimatedCost)
			}
			t.Logf("%d requests, %d tool list changes, %d cacheable + %d uncached prompt tokens, $%.5f: %q",
				len(reqs), changes, res.CacheableTokens, res.UncachedTokens, res.EstimatedCost, srv.OfferedTools())
		})
	}
}

// messageTokens is PromptCache's count of a message.
func messageTokens(t *testing.T, m tool.Message) int {
	n := 4 + tokenizer(t).Count(m.Content)
	for _, c := range m.ToolCalls {
		n += tokenizer(t).Count(c.Name) + tokenizer(t).Count(c.Arguments)
	}
	return n
}

// TestPromptCacheMeasure checks each step's PromptCache against the
// requests on the wire: the cacheable part is the longest run of tools,
// then messages, that the request repeats byte for byte from the one
// before; the rest is uncached; the cost follows the prices. A continued
// conversation is measured against the last request of the turn before.
func TestPromptCacheMeasure(t *testing.T) {
	prices := budget.Prices{Input: 2, CachedInput: 0.2, CacheWrite: 2.5, Output: 10}
	for _, policy := range []think.Policy{think.PolicyStable, think.PolicyFresh} {
		t.Run(policy.String(), func(t *testing.T) {
			f := newFixtureWith(t, with(map[string]func(context.Context, json.RawMessage) (string, error){"get_weather": weather}),
				// K 1 and no packing: the first step offers one tool, so
				// that the next step has one to append.
				think.Options{Budget: 150, Search: think.SearchNever, NoPack: true, Retrieval: retrieval.Options{K: 1}, Policy: policy})
			srv := agenttest.NewServer(
				agenttest.Reply{ToolCalls: calls("t__get_weather", `{"city":"Bern"}`)},
				agenttest.Reply{Content: "Sunny in Bern."},
				agenttest.Reply{Content: "Rain tomorrow."},
			)
			defer srv.Close()
			a := newAgent(t, srv, f, false, &agent.Options{Prices: prices})
			first, err := a.Run(context.Background(), "What is the weather in Bern?")
			if err != nil {
				t.Fatal(err)
			}
			second, err := a.Continue(context.Background(), first, "And the forecast for the next days?")
			if err != nil {
				t.Fatal(err)
			}
			steps := append(slices.Clone(first.Steps), second.Steps...)
			reqs := srv.Requests()
			if len(reqs) != len(steps) {
				t.Fatalf("%d requests for %d steps", len(reqs), len(steps))
			}
			changes := 0
			for i, st := range steps {
				pc := st.PromptCache
				tools := wireTools(t, reqs[i])
				want := 0
				for j, o := range st.Offered {
					if o.Name != reqs[i].Tools[j].Name {
						t.Fatalf("step %d: Offered %s, sent %s", i+1, o.Name, reqs[i].Tools[j].Name)
					}
					want += o.Tokens
				}
				for _, m := range reqs[i].Messages {
					want += messageTokens(t, m)
				}
				if pc.PromptTokens != want || pc.CacheableTokens+pc.UncachedTokens != pc.PromptTokens {
					t.Errorf("step %d: %+v, want %d prompt tokens, cacheable + uncached = prompt", i+1, pc, want)
				}
				cacheable := 0
				if i > 0 {
					prevTools, prev := wireTools(t, reqs[i-1]), reqs[i-1]
					same := len(prevTools) == len(tools)
					j := 0
					for ; j < len(tools) && j < len(prevTools) && bytes.Equal(tools[j], prevTools[j]); j++ {
						cacheable += st.Offered[j].Tokens
					}
					same = same && j == len(tools)
					if same {
						for k := 0; k < len(prev.Messages) && k < len(reqs[i].Messages) && cmp.Equal(prev.Messages[k], reqs[i].Messages[k]); k++ {
							cacheable += messageTokens(t, reqs[i].Messages[k])
						}
					} else {
						changes++
					}
					if pc.ToolsChanged == same {
						t.Errorf("step %d: ToolsChanged %v, the wire says %v", i+1, pc.ToolsChanged, !same)
					}
				}
				if pc.CacheableTokens != cacheable {
					t.Errorf("step %d: %d cacheable tokens, the wire says %d", i+1, pc.CacheableTokens, cacheable)
				}
				out := st.Usage.CompletionTokens
				if out == 0 {
					out = messageTokens(t, st.Message)
				}
				if got, want := st.EstimatedCost, prices.Cost(0, pc.CacheableTokens, pc.UncachedTokens, out); math.Abs(got-want) > 1e-12 {
					t.Errorf("step %d: estimated cost %v, want %v", i+1, got, want)
				}
			}
			// Without search_tools, the new turn's tool joins by retrieval:
			// appended, once.
			if policy == think.PolicyStable && (changes != 1 || !slices.Equal(reqs[1].ToolNames(), reqs[2].ToolNames()[:len(reqs[1].Tools)])) {
				t.Errorf("stable: the tool list changed %d times (want once, appending): %q", changes, srv.OfferedTools())
			}
			if policy == think.PolicyFresh && changes == 0 {
				t.Errorf("fresh: the tool list never changed (%q): the test shows nothing", srv.OfferedTools())
			}
			if got := first.ToolListChanges + second.ToolListChanges; got != changes {
				t.Errorf("ToolListChanges %d + %d, the wire shows %d", first.ToolListChanges, second.ToolListChanges, changes)
			}
			t.Logf("%s: %q", policy, srv.OfferedTools())
		})
	}
}

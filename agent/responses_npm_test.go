package agent_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/agent"
	"github.com/toolsift/toolsift/agent/openaimodel"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/agenttest"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/usage"
)

// threeToolModel scripts a model doing the task on the Responses API: it
// calls the next tool when it is loaded (sent as a function, or loaded by a
// tool_search_output of the conversation), searches for it with the API's
// tool search otherwise (once: then it calls it anyway), and answers with
// the sum when all three are done.
func threeToolModel(req agenttest.ResponsesRequest) agenttest.Reply {
	loaded := map[string]bool{}
	for _, n := range req.ToolNames() {
		loaded[n] = true
	}
	called := map[string]bool{}
	searched := map[string]bool{}
	var sum string
	for _, it := range req.Input {
		switch it.Type {
		case "tool_search_output":
			for _, tl := range it.Tools {
				loaded[tl.Name] = true
			}
		case "function_call":
			called[it.Name] = true
		case "function_call_output":
			var out string
			_ = json.Unmarshal(it.Output, &out)
			if strings.Contains(out, "42") {
				sum = "42"
			}
		case "tool_search_call":
			searched[string(it.Arguments)] = true
		}
	}
	for _, tl := range threeTools {
		if called[tl.name] {
			continue
		}
		q, _ := json.Marshal(map[string]string{"query": tl.query})
		if !loaded[tl.name] && !searched[string(q)] {
			return agenttest.Reply{ToolCalls: []tool.ToolCall{{Search: true, Arguments: string(q)}}}
		}
		return agenttest.Reply{ToolCalls: []tool.ToolCall{{Name: tl.name, Arguments: tl.args}}}
	}
	return agenttest.Reply{Content: "The sum is " + sum + "; the graph and the allowed directories are listed above."}
}

// TestResponsesThreeToolTask runs issue 21's three-tool task on the
// Responses path against the real npm reference servers (everything,
// memory, filesystem) through a Toolset whose budget (1000 tokens) is
// smaller than their catalog (the default budget fits it whole, and then
// nothing is deferred nor searched): the catalog goes deferred, tools
// that are not loaded are found by the API's tool search answered by
// toolsift, all three tools run, the answer has 42, the tools sent never
// change between steps and the input is only ever appended to.
func TestResponsesThreeToolTask(t *testing.T) {
	root := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*waitLimit())
	defer cancel()
	node := func(pkg string, args ...string) config.Server {
		return config.Server{Command: "node", Args: append([]string{npmServer(t, pkg)}, args...),
			Timeout: waitLimit(), Env: map[string]string{"MEMORY_FILE_PATH": filepath.Join(root, "memory.jsonl")}}
	}
	ts, err := toolsift.OpenConfig(ctx, &config.Config{Servers: map[string]config.Server{
		"everything": node("server-everything", "stdio"),
		"memory":     node("server-memory"),
		"filesystem": node("server-filesystem", root),
	}}, &toolsift.Options{Budget: 1000, K: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	for _, tl := range threeTools {
		if _, ok := ts.Get(tl.name); !ok {
			t.Fatalf("%s not in the catalog: %+v", tl.name, ts.Status())
		}
	}

	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "stream"}[stream], func(t *testing.T) {
			srv := agenttest.NewResponsesServerFunc(threeToolModel)
			defer srv.Close()
			a, err := agent.New(newResponses(t, srv.URL, openaimodel.ResponsesOptions{Stream: stream}), ts, &agent.Options{Tokenizer: tokenizer(t)})
			if err != nil {
				t.Fatal(err)
			}
			// Each run in a usage scope of its own: the second would
			// otherwise find the three tools the first called at once,
			// with no search, as a Toolset that learns should.
			uctx := usage.WithCaller(ctx, usage.Caller{Scope: t.Name()})
			res, err := a.Run(uctx, "Add 40 and 2, read the knowledge graph, and list the directories you are allowed to access.")
			if err != nil {
				t.Fatal(err)
			}
			var ran []string
			searches := 0
			for _, st := range res.Steps {
				for _, c := range st.Calls {
					switch c.Outcome {
					case agent.OutcomeOK:
						ran = append(ran, c.Name)
					case agent.OutcomeSearch:
						searches++
					default:
						t.Errorf("step %d: %s: %s: %s", st.N, c.Name, c.Outcome, c.Observation)
					}
				}
			}
			if diff := cmp.Diff([]string{threeTools[0].name, threeTools[1].name, threeTools[2].name}, ran); diff != "" {
				t.Errorf("tools run (-want +got):\n%s", diff)
			}
			if !strings.Contains(res.Answer, "42") {
				t.Errorf("answer %q, want 42", res.Answer)
			}
			reqs := srv.Requests()
			if reqs[0].DeferredNames() == nil {
				t.Fatalf("nothing deferred; loaded %q", reqs[0].ToolNames())
			}
			changes := 0
			for i := 1; i < len(reqs); i++ {
				if !cmp.Equal(reqs[i-1].Tools, reqs[i].Tools) {
					changes++
				}
				prev, now := reqs[i-1].Input, reqs[i].Input
				if len(now) <= len(prev) || !cmp.Equal(prev, now[:len(prev)]) {
					t.Errorf("request %d does not extend request %d's input", i+1, i)
				}
			}
			// Every tool ran was loaded: from the start, or by a search
			// toolsift answered.
			avail := map[string]bool{}
			for _, n := range reqs[0].ToolNames() {
				avail[n] = true
			}
			for _, it := range reqs[len(reqs)-1].Input {
				for _, tl := range it.Tools {
					avail[tl.Name] = true
				}
			}
			for _, n := range ran {
				if !avail[n] {
					t.Errorf("%s ran without being loaded (a search did not find it)", n)
				}
			}
			if changes != 0 {
				t.Errorf("the tools sent changed at %d of %d step transitions, want 0", changes, len(reqs)-1)
			}
			t.Logf("%d requests, %d searches, %d loaded and %d deferred tools, tool lists changed at %d of %d transitions",
				len(reqs), searches, len(reqs[0].ToolNames()), len(reqs[0].DeferredNames()), changes, len(reqs)-1)
			if searches == 0 {
				t.Error("no search: every tool was loaded from the start; the budget should leave some out")
			}
		})
	}
}

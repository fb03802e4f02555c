package agent_test

import (
	"context"
	"slices"
	"testing"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/agent"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/agenttest"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/think"
)

// TestRunLearns: the agent tells the Toolset of each successful call of a
// tool its step offered, found with search_tools first here, and the
// next run's first step for the same request in other words ranks that
// tool first; a failed call teaches nothing. Real reference servers
// (memory, everything) behind the Toolset, the scripted model in front.
func TestRunLearns(t *testing.T) {
	memory, everything := npmServer(t, "server-memory"), npmServer(t, "server-everything")
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit())
	defer cancel()
	ts, err := toolsift.OpenConfig(ctx, &config.Config{Servers: map[string]config.Server{
		"memory":     {Command: "node", Args: []string{memory}, Env: map[string]string{"MEMORY_FILE_PATH": t.TempDir() + "/memory.jsonl"}, Timeout: waitLimit()},
		"everything": {Command: "node", Args: []string{everything, "stdio"}, Timeout: waitLimit()},
	}}, &toolsift.Options{K: 3, Budget: 600, Store: store.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	const want = "memory__create_entities"
	if _, ok := ts.Get(want); !ok {
		t.Fatalf("no %s: %+v", want, ts.Status())
	}
	const ask, again = "keep in mind that alice is employed by acme", "remember that alice works at acme"
	first := func(st agent.Step) string { // the best-scored tool a step offered
		best, name := -1.0, ""
		for _, o := range st.Offered {
			if o.Reason == think.ReasonRetrieved && o.Score > best {
				best, name = o.Score, o.Name
			}
		}
		return name
	}
	run := func(task string, replies ...agenttest.Reply) *agent.Result {
		t.Helper()
		srv := agenttest.NewServer(replies...)
		defer srv.Close()
		a, err := agent.New(newOpenAI(t, srv.URL, false), ts, &agent.Options{Tokenizer: tokenizer(t)})
		if err != nil {
			t.Fatal(err)
		}
		res, err := a.Run(ctx, task)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	before := run(again, agenttest.Reply{Content: "noted"})
	t.Logf("before: %s first", first(before.Steps[0]))
	if first(before.Steps[0]) == want {
		t.Fatalf("before any call %q already ranks %s first (%+v): the test shows nothing", again, want, before.Steps[0].Offered)
	}

	// A failed call (bad arguments the server refuses) teaches nothing.
	res := run(ask,
		agenttest.Reply{ToolCalls: calls("search_tools", `{"query":"create entities in the knowledge graph"}`)},
		agenttest.Reply{ToolCalls: calls(want, `{"entities":"not a list"}`)},
		agenttest.Reply{Content: "could not"},
	)
	if c := res.Steps[1].Calls; len(c) != 1 || c[0].Outcome == agent.OutcomeOK || !c[0].Offered {
		t.Fatalf("the failing call: %+v, want an offered call that failed", c)
	}
	if got := first(run(again, agenttest.Reply{Content: "noted"}).Steps[0]); got == want {
		t.Errorf("after a failed call, %q ranks %s first: it learned from a failure", again, want)
	}

	res = run(ask,
		agenttest.Reply{ToolCalls: calls("search_tools", `{"query":"create entities in the knowledge graph"}`)},
		agenttest.Reply{ToolCalls: calls(want, `{"entities":[{"name":"alice","entityType":"person","observations":["works at acme"]}]}`)},
		agenttest.Reply{Content: "noted"},
	)
	if c := res.Steps[1].Calls; len(c) != 1 || c[0].Outcome != agent.OutcomeOK || !c[0].Offered {
		t.Fatalf("the call: %+v, want an offered call that succeeded", c)
	}
	after := run(again, agenttest.Reply{Content: "noted"})
	if got := first(after.Steps[0]); got != want {
		names := make([]string, 0, len(after.Steps[0].Offered))
		for _, o := range after.Steps[0].Offered {
			names = append(names, o.Name)
		}
		t.Errorf("after the call, the first step for %q ranks %s first (offered %v), want %s", again, got, names, want)
	}
	if !slices.ContainsFunc(after.Steps[0].Offered, func(o agent.OfferedTool) bool { return o.Name == want }) {
		t.Errorf("after the call, %s is not offered", want)
	}
}

package agent_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/agent"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/agenttest"
	"github.com/toolsift/toolsift/internal/npmtest"
)

// npmServer returns the entry point of a reference MCP server installed in
// upstream/testdata/npm by .ci/run (see npmtest.Dir).
func npmServer(t *testing.T, pkg string) string {
	return npmtest.Entry(npmtest.Dir(t, filepath.Join("..", "upstream", "testdata", "npm")), pkg)
}

// TestRunNPMServer runs the agent against the real "everything" reference
// server over stdio.
func TestRunNPMServer(t *testing.T) {
	entry := npmServer(t, "server-everything")
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit())
	defer cancel()
	ts, err := toolsift.OpenConfig(ctx, &config.Config{Servers: map[string]config.Server{
		"everything": {Command: "node", Args: []string{entry, "stdio"}, Timeout: waitLimit()},
	}}, &toolsift.Options{Budget: 500, K: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	tools := ts.Tools()
	if len(tools) == 0 {
		t.Fatalf("no tools from server-everything: %+v", ts.Status())
	}

	srv := agenttest.NewServer(
		agenttest.Reply{ToolCalls: calls("everything__get-sum", `{"a":2,"b":3}`, "everything__echo", `{"message":"héllo"}`)},
		agenttest.Reply{Content: "2 + 3 = 5"},
	)
	defer srv.Close()
	a, err := agent.New(newOpenAI(t, srv.URL, true), ts, &agent.Options{Tokenizer: tokenizer(t)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(ctx, "Get the sum of the numbers 2 and 3, then echo héllo.")
	if err != nil {
		t.Fatal(err)
	}
	offered := srv.OfferedTools()
	if len(offered) != 2 || !slices.Contains(offered[0], "everything__get-sum") || !slices.Contains(offered[0], "everything__echo") {
		t.Errorf("offered %q, want get-sum and echo at step 1", offered)
	}
	if len(offered[0]) >= len(tools) {
		t.Errorf("step 1 offered %d of %d tools; want fewer", len(offered[0]), len(tools))
	}
	c := res.Steps[0].Calls
	if len(c) != 2 || c[0].Outcome != agent.OutcomeOK || !strings.Contains(c[0].Observation, "5") ||
		c[1].Outcome != agent.OutcomeOK || !strings.Contains(c[1].Observation, "héllo") {
		t.Errorf("calls: %+v", c)
	}
	if res.Answer != "2 + 3 = 5" {
		t.Errorf("answer %q", res.Answer)
	}
}

package anthropicmodel_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/agent"
	"github.com/toolsift/toolsift/agent/anthropicmodel"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/anthropictest"
	"github.com/toolsift/toolsift/internal/npmtest"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/toolindex"
)

// threeTools is the three-tool task of issue 21: the scripted model calls
// each tool when it can see it and asks search_tools for it when not.
var threeTools = []struct{ name, query, args string }{
	{"everything__get-sum", "add two numbers", `{"a":40,"b":2}`},
	{"memory__read_graph", "read the whole knowledge graph", `{}`},
	{"filesystem__list_allowed_directories", "list the directories this server may access", `{}`},
}

// scriptedModel answers as a model that follows the task: the next tool it
// has not called yet, if loaded, else a search for it; the answer once all
// three ran.
func scriptedModel(r anthropictest.Request) anthropictest.Reply {
	called := map[string]bool{}
	searched := map[string]int{}
	for _, m := range r.Messages {
		for _, c := range m.ToolCalls {
			called[c.Name] = true
			if c.Name == think.SearchToolName {
				searched[c.Arguments]++
			}
		}
	}
	loaded := r.Loaded()
	for _, w := range threeTools {
		if called[w.name] {
			continue
		}
		if slices.Contains(loaded, w.name) {
			return anthropictest.Reply{ToolCalls: []tool.ToolCall{{Name: w.name, Arguments: w.args}}}
		}
		args, _ := json.Marshal(map[string]string{"query": w.query})
		if searched[string(args)] > 0 {
			return anthropictest.Reply{Content: "I could not find " + w.name}
		}
		return anthropictest.Reply{Content: "Let me find a tool for that.", ToolCalls: []tool.ToolCall{{Name: think.SearchToolName, Arguments: string(args)}}}
	}
	return anthropictest.Reply{Content: "The sum is 42."}
}

// TestThreeToolTask runs the three-tool task against the real npm reference
// servers (everything, memory, filesystem) on the Anthropic path: per step
// and with deferred tools, as JSON and as a stream. Every path calls the
// three tools and answers 42; messages are only ever appended; with deferred
// tools the tools sent are the same bytes at every step, the search loads
// the tools it found with tool_reference blocks, and every step after the
// first reads the prompt cache.
func TestThreeToolTask(t *testing.T) {
	dir := npmtest.Dir(t, filepath.Join("..", "..", "upstream", "testdata", "npm"))
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit())
	defer cancel()
	allowed := t.TempDir()
	ts, err := toolsift.OpenConfig(ctx, &config.Config{Servers: map[string]config.Server{
		"everything": {Command: "node", Args: []string{npmtest.Entry(dir, "server-everything"), "stdio"}, Timeout: waitLimit()},
		"memory": {Command: "node", Args: []string{npmtest.Entry(dir, "server-memory")}, Timeout: waitLimit(),
			Env: map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}},
		"filesystem": {Command: "node", Args: []string{npmtest.Entry(dir, "server-filesystem"), allowed}, Timeout: waitLimit()},
	}}, &toolsift.Options{Thinker: newThinker(t, think.Options{Budget: 400, Retrieval: retrieval.Options{K: 3}, Tokenizer: tokenizer(t),
		// Not packed: the scenario needs a tool the first step leaves
		// out, for the deferred path's search to load (packing fills the
		// 400 tokens with 30 more candidates, which include it).
		NoPack: true})})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	for _, w := range threeTools {
		if _, ok := ts.Get(w.name); !ok {
			t.Fatalf("no %s in the catalog: %+v", w.name, ts.Status())
		}
	}

	for _, tt := range []struct {
		name           string
		noDefer, strem bool
	}{
		{"per step/json", true, false},
		{"per step/sse", true, true},
		{"deferred/json", false, false},
		{"deferred/sse", false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := anthropictest.NewServerFunc(scriptedModel)
			defer srv.Close()
			m := newModel(t, srv.URL, anthropicmodel.Options{Stream: tt.strem, NoDefer: tt.noDefer})
			a, err := agent.New(m, ts, &agent.Options{Tokenizer: tokenizer(t)})
			if err != nil {
				t.Fatal(err)
			}
			res, err := a.Run(ctx, "Get the sum of 40 and 2, read the knowledge graph, and list the allowed directories.")
			if err != nil {
				t.Fatal(err)
			}
			if res.Answer != "The sum is 42." {
				t.Errorf("answer %q", res.Answer)
			}
			ok := map[string]bool{}
			for _, st := range res.Steps {
				for _, c := range st.Calls {
					if c.Outcome == agent.OutcomeOK {
						ok[c.Name] = true
					}
					if c.Name == "everything__get-sum" && !strings.Contains(c.Observation, "42") {
						t.Errorf("get-sum said %q", c.Observation)
					}
				}
			}
			for _, w := range threeTools {
				if !ok[w.name] {
					t.Errorf("%s was not called successfully", w.name)
				}
			}

			reqs := srv.Requests()
			var prevTools []byte
			changes, searches := 0, 0
			for i, r := range reqs {
				if i > 0 {
					prev := reqs[i-1].Messages
					if len(r.Messages) < len(prev) || !slices.EqualFunc(prev, r.Messages[:len(prev)], equalMessage) {
						t.Errorf("request %d does not append to request %d's messages", i+1, i)
					}
				}
				toolsJSON := rawField(t, r.Body, "tools")
				if i > 0 && !bytes.Equal(toolsJSON, prevTools) {
					changes++
				}
				prevTools = toolsJSON
				for _, msg := range r.Messages {
					if msg.Role == tool.RoleTool && len(msg.Found) > 0 && i == len(reqs)-1 {
						searches++
					}
				}
				t.Logf("request %d: %d tools (%d deferred), breakpoints %v, usage %+v",
					i+1, len(r.ToolNames()), len(r.DeferredNames()), r.Breakpoints, r.Usage)
			}
			t.Logf("%d requests, tool list changed at %d of %d transitions", len(reqs), changes, len(reqs)-1)
			if tt.noDefer {
				for i, r := range reqs {
					if len(r.DeferredNames()) > 0 {
						t.Errorf("request %d sent deferred tools with NoDefer", i+1)
					}
				}
				return
			}
			if changes != 0 {
				t.Errorf("with deferred tools the tool list changed at %d transitions, want 0", changes)
			}
			if searches == 0 {
				t.Error("no search loaded a deferred tool with tool_reference: the task did not exercise tool search")
			}
			for i, r := range reqs {
				if len(r.DeferredNames()) == 0 {
					t.Errorf("request %d: no deferred tools", i+1)
				}
				if i > 0 && r.Usage.CachedPromptTokens == 0 {
					t.Errorf("request %d read nothing from the prompt cache: %+v", i+1, r.Usage)
				}
			}
			if u := res.Usage; u.CachedPromptTokens == 0 || u.CacheWriteTokens == 0 {
				t.Errorf("run usage %+v: want cache reads and writes", u)
			}
		})
	}
}

func equalMessage(a, b tool.Message) bool {
	return a.Role == b.Role && a.Content == b.Content && a.ToolCallID == b.ToolCallID &&
		slices.Equal(a.ToolCalls, b.ToolCalls) && slices.Equal(a.Found, b.Found)
}

func rawField(t *testing.T, body []byte, field string) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	return m[field]
}

// newThinker is a Think step with to over an empty index of the library's
// embedders (toolsift.DefaultEmbedders), for toolsift.Options.Thinker.
func newThinker(t testing.TB, to think.Options) *think.Thinker {
	t.Helper()
	vector, semantic, err := toolsift.DefaultEmbedders()
	if err != nil {
		t.Fatal(err)
	}
	ix, err := toolindex.New(vector, &toolindex.Options{Semantic: semantic})
	if err != nil {
		t.Fatal(err)
	}
	th, err := think.New(ix, &to)
	if err != nil {
		t.Fatal(err)
	}
	return th
}

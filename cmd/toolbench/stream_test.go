package main

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolsift/toolsift/agent"
	"github.com/toolsift/toolsift/internal/agenttest"
	"github.com/toolsift/toolsift/internal/anthropictest"
	"github.com/toolsift/toolsift/tool"
)

// TestRunStreams: with streaming on, the tool call and the answer are
// printed as their pieces arrive (the scripted server sends 2 bytes per
// delta), before the step's model line; without, neither is.
func TestRunStreams(t *testing.T) {
	config := runConfig(t)
	for _, stream := range []bool{true, false} {
		srv := agenttest.NewServer(
			agenttest.Reply{ToolCalls: []tool.ToolCall{{Name: "city__get_weather", Arguments: `{"city":"Bern"}`}}, ChunkSize: 2},
			agenttest.Reply{Content: "It is sunny\nin Bern.", ChunkSize: 2},
		)
		code, stdout, stderr := runWithEnv(t, map[string]string{"OPENAI_BASE_URL": srv.URL},
			"run", "--config", config, "--model", "test-model", "--budget", "150", "--k", "1", "--search-tools", "never",
			"--stream="+map[bool]string{true: "true", false: "false"}[stream], "What is the weather in Bern?")
		srv.Close()
		if code != 0 {
			t.Fatalf("stream=%v: exit %d\nstdout:\n%s\nstderr:\n%s", stream, code, stdout, stderr)
		}
		live := []string{
			`(?s)step 1 .*\n  → city__get_weather \{"city":"Bern"\}\n  model: 1 tool call`,
			`(?s)step 2 .*\n  > It is sunny\n    in Bern\.\n  model: 0 tool calls`,
		}
		for _, want := range live {
			if got := regexp.MustCompile(want).MatchString(stdout); got != stream {
				t.Errorf("stream=%v: stdout matches %q: %v\n%s", stream, want, got, stdout)
			}
		}
		if !strings.Contains(stdout, "answer:\nIt is sunny\nin Bern.") {
			t.Errorf("stream=%v: no answer at the end:\n%s", stream, stdout)
		}
	}
}

// TestRunStreamDefault: run sends plain requests unless --stream, as the
// library does; with --stream, a server that does not stream (it answers
// with one JSON body) fails the run with an error naming the flag to drop,
// on each API.
func TestRunStreamDefault(t *testing.T) {
	config := runConfig(t)
	srv := agenttest.NewServer(agenttest.Reply{Content: "Hello."})
	code, stdout, stderr := runWithEnv(t, map[string]string{"OPENAI_BASE_URL": srv.URL}, "run", "--config", config, "Say hello")
	srv.Close()
	if code != 0 || !strings.Contains(stdout, "answer:\nHello.") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if reqs := srv.Requests(); len(reqs) != 1 || reqs[0].Stream {
		t.Errorf("%d requests, the first streamed: %v; want 1, not streamed", len(reqs), len(reqs) > 0 && reqs[0].Stream)
	}

	for _, api := range []string{"chat", "responses", "anthropic"} {
		var url, env string
		switch api {
		case "chat":
			s := agenttest.NewServer(agenttest.Reply{Content: "Hello.", NoStream: true})
			defer s.Close()
			url, env = s.URL, "OPENAI_BASE_URL"
		case "responses":
			s := agenttest.NewResponsesServer(agenttest.Reply{Content: "Hello.", NoStream: true})
			defer s.Close()
			url, env = s.URL, "OPENAI_BASE_URL"
		case "anthropic":
			s := anthropictest.NewServer(anthropictest.Reply{Content: "Hello.", NoStream: true})
			defer s.Close()
			url, env = s.URL, "ANTHROPIC_BASE_URL"
		}
		code, stdout, stderr := runWithEnv(t, map[string]string{env: url}, "run", "--api", api, "--config", config, "--model", "test-model", "--stream", "Say hello")
		want := "toolbench run: model test-model at " + url + ": the server does not stream (it answered the streaming request without an event stream): run without --stream\n"
		if code != 1 || !strings.HasSuffix(stderr, want) {
			t.Errorf("--api %s --stream, a server that does not stream: exit %d\nstdout:\n%s\nstderr:\n%s\nwant it to end with %q", api, code, stdout, stderr, want)
		}
	}
}

// TestLiveLine: text pieces join on one line (later lines indented), each
// call gets its line with its arguments cut at maxLiveArgs runes, and a
// call's pieces that come interleaved with another's reopen its line.
func TestLiveLine(t *testing.T) {
	var b bytes.Buffer
	var l liveLine
	for _, d := range []agent.Delta{
		{Text: "Let me "}, {Text: "look.\nOne moment."},
		{Tool: true, Index: 0, ID: "a", Name: "w__get"}, {Tool: true, Index: 0, Arguments: `{"city":`},
		{Tool: true, Index: 1, ID: "b", Name: "w__long"}, {Tool: true, Index: 1, Arguments: `{"text":"` + strings.Repeat("é", 200) + `"}`},
		{Tool: true, Index: 0, Arguments: `"Bern"}`},
		{Tool: true, Index: 1, Arguments: `more`},
	} {
		l.add(&b, d)
	}
	l.done(&b)
	want := "  > Let me look.\n    One moment.\n" +
		`  → w__get {"city":` + "\n" +
		`  → w__long {"text":"` + strings.Repeat("é", maxLiveArgs-len(`{"text":"`)) + "…\n" +
		`  → w__get "Bern"}` + "\n" +
		"  → w__long \n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("printed (-want +got):\n%s", diff)
	}
}

// TestRunAPI: --api responses runs the agent on the Responses API (the
// catalog deferred beside the first step's tools, a tool_search answered
// by toolsift), --api anthropic runs on the Messages API, and an unknown
// API is a usage error.
func TestRunAPI(t *testing.T) {
	config := runConfig(t)
	srv := agenttest.NewResponsesServer(
		agenttest.Reply{ToolCalls: []tool.ToolCall{{Search: true, Arguments: `{"query":"weather forecast for the next days"}`}}},
		agenttest.Reply{ToolCalls: []tool.ToolCall{{Name: "city__get_forecast", Arguments: `{"city":"Bern"}`}}},
		agenttest.Reply{Content: "Rain tomorrow."},
	)
	defer srv.Close()
	code, stdout, stderr := runWithEnv(t, map[string]string{"OPENAI_BASE_URL": srv.URL},
		"run", "--api", "responses", "--config", config, "--model", "test-model", "--budget", "150", "--k", "1", "What is the weather in Bern now?")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		`model test-model \(responses API\) at `,
		`and \d+ tools deferred \(\d+ tokens\): the model loads them with its tool search`,
		`call search_tools \{"query":"weather forecast for the next days"\} → search`,
		`call city__get_forecast \{"city":"Bern"\} → ok`,
		`answer:\nRain tomorrow.`,
	} {
		if !regexp.MustCompile(want).MatchString(stdout) {
			t.Errorf("stdout does not match %q:\n%s", want, stdout)
		}
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || !strings.Contains(strings.Join(reqs[0].DeferredNames(), " "), "city__get_forecast") {
		t.Fatalf("%d requests; first deferred %q", len(reqs), reqs[0].DeferredNames())
	}
	if got := reqs[0].ToolNames(); got[len(got)-1] != "tool_search" {
		t.Errorf("loaded %q, want tool_search last", got)
	}

	// A hosted server: its offered tools go in allowed_tools; the
	// provider's call is printed.
	hsrv := agenttest.NewResponsesServer(agenttest.Reply{
		Hosted:  []tool.HostedCall{{Server: "city", Name: "get_weather", Arguments: `{"city":"Bern"}`, Output: "Bern: sunny"}},
		Content: "Sunny."})
	defer hsrv.Close()
	code, stdout, stderr = runWithEnv(t, map[string]string{"OPENAI_BASE_URL": hsrv.URL},
		"run", "--api", "responses", "--hosted", "city=https://mcp.example/city", "--config", config, "--model", "test-model", "--budget", "150", "--k", "1", "What is the weather in Bern now?")
	if code != 0 {
		t.Fatalf("--hosted: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if want := `hosted call city get_weather {"city":"Bern"} (by the provider) → Bern: sunny`; !strings.Contains(stdout, want) {
		t.Errorf("stdout lacks %q:\n%s", want, stdout)
	}
	var mcpTool *agenttest.ResponsesTool
	for i, tl := range hsrv.Requests()[0].Tools {
		if tl.Type == "mcp" {
			mcpTool = &hsrv.Requests()[0].Tools[i]
		}
	}
	if mcpTool == nil || mcpTool.ServerURL != "https://mcp.example/city" || !slices.Contains(mcpTool.AllowedTools, "get_weather") {
		t.Errorf("mcp tool %+v, want city's with get_weather allowed", mcpTool)
	}
	for _, bad := range [][]string{
		{"--api", "responses", "--hosted", "nowhere=https://x.example/mcp"},
		{"--api", "chat", "--hosted", "city=https://x.example/mcp"},
	} {
		args := append([]string{"run", "--config", config}, bad...)
		code, _, stderr = runWithEnv(t, map[string]string{"OPENAI_BASE_URL": hsrv.URL}, append(args, "task")...)
		if code != 1 || !strings.Contains(stderr, "--hosted") {
			t.Errorf("%q: exit %d, stderr:\n%s", bad, code, stderr)
		}
	}

	// The Anthropic Messages API, against its scripted server: the tool
	// is called and the answer printed.
	asrv := anthropictest.NewServer(
		anthropictest.Reply{ToolCalls: []tool.ToolCall{{Name: "city__get_forecast", Arguments: `{"city":"Bern"}`}}},
		anthropictest.Reply{Content: "Rain tomorrow."},
	)
	defer asrv.Close()
	code, stdout, stderr = runWithEnv(t, map[string]string{"ANTHROPIC_BASE_URL": asrv.URL},
		"run", "--api", "anthropic", "--config", config, "--model", "claude-test", "What is the weather forecast in Bern?")
	if code != 0 {
		t.Fatalf("--api anthropic: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		`model claude-test \(anthropic API\) at ` + regexp.QuoteMeta(asrv.URL),
		`call city__get_forecast \{"city":"Bern"\} → ok`,
		`answer:\nRain tomorrow.`,
	} {
		if !regexp.MustCompile(want).MatchString(stdout) {
			t.Errorf("--api anthropic: stdout does not match %q:\n%s", want, stdout)
		}
	}
	if n := len(asrv.Requests()); n != 2 {
		t.Errorf("--api anthropic: %d requests, want 2", n)
	}
	code, _, stderr = runWithEnv(t, map[string]string{"OPENAI_API_KEY": "sk-x"}, "run", "--api", "anthropic", "--config", config, "task")
	if code != 1 || !strings.Contains(stderr, "no Anthropic API key configured") {
		t.Errorf("--api anthropic without a key: exit %d, stderr:\n%s", code, stderr)
	}
	code, _, stderr = runWithEnv(t, map[string]string{"OPENAI_API_KEY": "sk-x"}, "run", "--api", "gemini", "--config", config, "task")
	if code != 2 || !strings.Contains(stderr, `--api "gemini": want chat, responses or anthropic`) {
		t.Errorf("--api gemini: exit %d, stderr:\n%s", code, stderr)
	}
}

package upstream_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/upstream"
)

// deepHTTPServer is testserver -mode deep behind a hand-written streamable
// HTTP endpoint (the SDK's server would not send what it sends): every
// request is answered by the stdio server of one process, in a JSON body
// or, with sse, as an event stream.
func deepHTTPServer(t *testing.T, levels int, sse bool) *httptest.Server {
	t.Helper()
	cmd := exec.Command(testServerPath(t), "-mode", "deep", "-depth", fmt.Sprint(levels))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan []byte)
	go func() {
		defer close(lines)
		r := bufio.NewReader(stdout)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				lines <- line
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "no stream here", http.StatusMethodNotAllowed)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal(body, &req)
		if _, err := stdin.Write(append(body, '\n')); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		if req.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		// Everything the process writes until the answer: notifications
		// first (only an event stream can carry them).
		var out [][]byte
		for line := range lines {
			out = append(out, line)
			if strings.Contains(string(line[:min(len(line), 60)]), `"id":`+string(req.ID)+`,`) {
				break
			}
		}
		if sse {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, l := range out {
				fmt.Fprintf(w, "event: message\ndata: %s\n\n", strings.TrimSpace(string(l)))
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(out[len(out)-1])
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestDeepMessages: a server listing one tool nested hundreds to 100,000
// levels deep keeps its other tools, the deep one named in its warnings;
// an answer nested deeper than the SDK decodes fails its call at once
// naming the server, and a deep notification is dropped; the session goes
// on. Over stdio, and over HTTP in JSON bodies and event streams.
func TestDeepMessages(t *testing.T) {
	for _, tc := range []struct {
		transport string
		levels    int
	}{
		{"stdio", 495}, {"stdio", 5000}, {"stdio", 100000},
		{"json", 495}, {"json", 5000},
		{"sse", 495}, {"sse", 100000},
	} {
		t.Run(fmt.Sprintf("%s/%d", tc.transport, tc.levels), func(t *testing.T) {
			checkGoroutines(t)
			var sc config.Server
			switch tc.transport {
			case "stdio":
				sc = config.Server{Command: testServerPath(t), Args: []string{"-mode", "deep", "-depth", fmt.Sprint(tc.levels)}}
			default:
				sc = config.Server{URL: deepHTTPServer(t, tc.levels, tc.transport == "sse").URL + "/mcp", Type: "http"}
			}
			cfg := &config.Config{Servers: map[string]config.Server{"evil": sc}}
			hub := startHub(t, cfg, &upstream.HubOptions{MaxRestarts: -1, Store: store.NewMemory(), Timeout: waitLimit()}, nil)
			st := statusOf(t, hub, "evil")
			depth := 2*tc.levels + 2 // tool, input schema, 2 per level, the string's schema
			want := fmt.Sprintf(`tool "deep": nested %d levels deep, over the limit of 64 (HubOptions.MaxSchemaDepth); dropped`, depth)
			if st.State != upstream.StateReady || st.Tools != 2 || len(st.Warnings) != 1 || st.Warnings[0] != want {
				t.Fatalf("state %s, %d tools, warnings %q, error %v: want ready with 2 tools and %q", st.State, st.Tools, st.Warnings, st.Err, want)
			}
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit())
			defer cancel()
			start := time.Now()
			// A JSON-RPC error answering a call is the model's to read.
			res, err := hub.Call(ctx, "evil__deep_answer", nil)
			took := time.Since(start)
			answer := depth + 2 // the message, its result, structuredContent; the schema
			wantErr := fmt.Sprintf("error: server evil sent a response nested %d levels deep, deeper than the 1000 the MCP SDK decodes; dropped", answer)
			if answer <= 1000 {
				wantErr = "deep" // decoded as it is
			}
			if err != nil || res.IsError != (answer > 1000) || !strings.HasPrefix(res.Content, wantErr) {
				t.Fatalf("deep answer: %.200q (is error %v), %v; want %q", res.Content, res.IsError, err, wantErr)
			}
			t.Logf("deep answer after %v: %.200s", took, res.Content)
			for range 2 { // the deep notification before each is dropped
				res, err := hub.Call(ctx, "evil__good", nil)
				if err != nil || res.Content != "ok" {
					t.Fatalf("good after a deep notification: %.200q, %v", res.Content, err)
				}
			}
			if st := statusOf(t, hub, "evil"); st.Restarts != 0 {
				t.Errorf("%d restarts: the deep messages broke the session", st.Restarts)
			}
		})
	}
}

// TestDeepToolLimit: MaxSchemaDepth says which tools are too deep; a
// negative one leaves only the SDK's limit.
func TestDeepToolLimit(t *testing.T) {
	checkGoroutines(t)
	bin := testServerPath(t)
	for _, tc := range []struct {
		max, levels, tools int
		warning            string
	}{
		{10, 4, 3, ""},
		{10, 5, 2, `tool "deep": nested 12 levels deep, over the limit of 10 (HubOptions.MaxSchemaDepth); dropped`},
		{-1, 400, 3, ""},
		{-1, 499, 2, `tool "deep": nested 1000 levels deep, over the limit of 997 (HubOptions.MaxSchemaDepth); dropped`},
	} {
		cfg := &config.Config{Servers: map[string]config.Server{"evil": {Command: bin, Args: []string{"-mode", "deep", "-depth", fmt.Sprint(tc.levels)}}}}
		hub := startHub(t, cfg, &upstream.HubOptions{MaxRestarts: -1, Store: store.NewMemory(), MaxSchemaDepth: tc.max}, nil)
		st := statusOf(t, hub, "evil")
		if st.State != upstream.StateReady || st.Tools != tc.tools || strings.Join(st.Warnings, "") != tc.warning {
			t.Errorf("max %d, %d levels: state %s, %d tools, warnings %q (%v); want %d tools, warning %q", tc.max, tc.levels, st.State, st.Tools, st.Warnings, st.Err, tc.tools, tc.warning)
		}
		hub.Close()
	}
}

// TestDeepDial: a server reached through config.Server.Dial is filtered
// as a stdio server is: its deep tool is dropped and named.
func TestDeepDial(t *testing.T) {
	checkGoroutines(t)
	deep := json.RawMessage(strings.Repeat(`{"type":"object","properties":{"a":`, 495) + `{"type":"string"}` + strings.Repeat("}}", 495))
	sc := rawServer(func(string) map[string]any {
		return map[string]any{"tools": []any{rawTool("good", "A tool."), map[string]any{"name": "deep", "inputSchema": deep}}}
	})
	st, _ := hostileHub(t, sc, nil)
	want := `tool "deep": nested 992 levels deep, over the limit of 64 (HubOptions.MaxSchemaDepth); dropped`
	if st.State != upstream.StateReady || st.Tools != 1 || len(st.Warnings) != 1 || st.Warnings[0] != want {
		t.Fatalf("state %s, %d tools, warnings %q, error %v: want ready with 1 tool and %q", st.State, st.Tools, st.Warnings, st.Err, want)
	}
}

//go:build unix

package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/toolsift/toolsift/internal/testenv"
)

// TestServeMetrics: toolsift serve --metrics serves /metrics (and the
// probes) on a listener of its own, not on the MCP one. Its servers are
// the test binary over stdio (serveUpstream): "up", whose tool changed
// since an earlier run trusted it, and "ok", new. After a session of a
// go-sdk client over HTTP (a search, a call of ok's tool, one of up's,
// refused as quarantined), the scrape, parsed by the Prometheus text
// parser, counts exactly those, and has the quarantined tool, the
// servers' states, the session open and the Go runtime's metrics.
func TestServeMetrics(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	st := t.TempDir()
	server := func(v string) string {
		return `{"command": "` + exe + `", "args": ["-test.run=^$"], "env": {"` + upstreamEnv + `": "` + v + `"}}`
	}
	writeConfig := func(servers string) string {
		path := filepath.Join(t.TempDir(), "mcp.json")
		if err := os.WriteFile(path, []byte(`{"mcpServers": {`+servers+`}}`), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// The first run trusts up's version 1 (stdio: it ends with its input).
	var first strings.Builder
	e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: &first, getenv: func(string) string { return "" }}
	if code := run(context.Background(), e, []string{"serve", "--config", writeConfig(`"up": ` + server("1")), "--store", st}); code != 0 {
		t.Fatalf("first serve: exit %d\n%s", code, first.String())
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var log testenv.Buffer
	e = &env{stdin: strings.NewReader(""), stdout: &log, stderr: &log, getenv: func(string) string { return "" }}
	addr, done := startServe(ctx, t, e, &log, "serve", "--config", writeConfig(`"up": `+server("2")+`, "ok": `+server("1")),
		"--store", st, "--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0")
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exited with %d after its ctx ended", code)
		}
		if t.Failed() {
			t.Logf("serve's log:\n%s", log.String())
		}
	}()
	m := regexp.MustCompile(`msg="serving metrics" url=(\S+)`).FindStringSubmatch(log.String())
	if m == nil {
		t.Fatalf("no metrics url in serve's log:\n%s", log.String())
	}
	metricsURL := m[1]
	base := strings.TrimSuffix(metricsURL, "/metrics")
	if strings.Contains(base, addr) {
		t.Fatalf("metrics at %s: on the MCP listener %s", metricsURL, addr)
	}
	for _, u := range []string{base + "/healthz", base + "/readyz"} {
		deadline := time.Now().Add(testenv.WaitLimit())
		for code, _ := probe(t, u); code != http.StatusOK; code, _ = probe(t, u) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d, want 200 (ok connects while serve listens)", u, code)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if resp, err := http.Get("http://" + addr + "/metrics"); err != nil {
		t.Fatal(err)
	} else if resp.Body.Close(); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /metrics on the MCP listener: %d, want 404", resp.StatusCode)
	}

	client := mcp.NewClient(&mcp.Implementation{Name: "metrics-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "look a word up", "k": 5}})
	if err != nil || res.IsError {
		t.Fatalf("search_tools: %v %+v", err, res)
	}
	var ans struct{ Tools []struct{ Name string } }
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &ans); err != nil {
		t.Fatal(err)
	}
	for name, wantErr := range map[string]bool{"ok__lookup": false, "up__lookup": true} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": name}})
		if err != nil || res.IsError != wantErr {
			t.Fatalf("call_tool(%s): %v %+v, want isError %v", name, err, res, wantErr)
		}
		if text := res.Content[0].(*mcp.TextContent).Text; wantErr && !strings.Contains(text, "toolbench trust") {
			t.Fatalf("call_tool(%s) = %q, want the quarantine's refusal", name, text)
		}
	}

	resp, err := http.Get(metricsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing %s: %v", metricsURL, err)
	}
	got := map[string]float64{}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			key := name
			for _, l := range m.GetLabel() {
				key += "," + l.GetName() + "=" + l.GetValue()
			}
			switch {
			case m.Counter != nil:
				got[key] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				got[key] = m.GetGauge().GetValue()
			case m.Histogram != nil:
				got[key+",count"] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	for k, v := range map[string]float64{
		"toolsift_requests_total,method=tools/call,outcome=ok":         2, // the search, ok's call
		"toolsift_requests_total,method=tools/call,outcome=tool-error": 1, // the refusal
		"toolsift_searches_total,outcome=ok":                           1,
		"toolsift_search_results,count":                                1,
		"toolsift_upstream_calls_total,outcome=ok,server=ok":           1,
		"toolsift_upstream_calls_total,outcome=quarantined,server=up":  1,
		"toolsift_upstream_call_duration_seconds,server=ok,count":      1,
		"toolsift_upstream_server_quarantined_tools,server=up":         1,
		"toolsift_upstream_server_quarantined_tools,server=ok":         0,
		"toolsift_upstream_server_state,server=ok,state=ready":         1,
		"toolsift_upstream_server_state,server=up,state=ready":         1,
		"toolsift_upstream_server_tools,server=ok":                     1,
		"toolsift_upstream_server_tools,server=up":                     1,
		"toolsift_sessions_open":                                       1,
		"toolsift_listen_streams_open":                                 0,
	} {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	for k := range got {
		if strings.HasPrefix(k, "toolsift_audit_") {
			t.Errorf("%s without --audit", k)
		}
	}
	// The store (--store) is instrumented: the tool lists and trust
	// records read at start from the first run's folder.
	if n := got["toolsift_store_operations_total,op=get,outcome=ok"]; n < 1 {
		t.Errorf("toolsift_store_operations_total{op=get,outcome=ok} = %v, want at least 1 (the cached tool lists)", n)
	}
	if got["go_goroutines"] <= 0 {
		t.Errorf("go_goroutines = %v: no Go runtime metrics", got["go_goroutines"])
	}
	if len(ans.Tools) == 0 {
		t.Errorf("search_tools found nothing")
	}
}

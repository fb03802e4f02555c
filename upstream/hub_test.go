package upstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/upstream"
)

func TestHubListsAllPages(t *testing.T) {
	checkGoroutines(t)
	srv := newServer("paged", &mcp.ServerOptions{PageSize: 2}, "a", "b", "c", "d", "e")
	cfg := &config.Config{Servers: map[string]config.Server{"paged": memServer(srv)}}
	hub := startHub(t, cfg, nil, nil)

	want := []string{"paged__a", "paged__b", "paged__c", "paged__d", "paged__e"}
	if diff := cmp.Diff(want, toolNames(hub.Tools())); diff != "" {
		t.Errorf("Tools() (-want +got):\n%s", diff)
	}
	st := statusOf(t, hub, "paged")
	if st.State != upstream.StateReady || st.Tools != 5 || st.ServerName != "paged" {
		t.Errorf("status = %+v, want ready with 5 tools from server paged", st)
	}
}

func TestHubConvertsTools(t *testing.T) {
	checkGoroutines(t)
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	schema := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)
	srv.AddTool(&mcp.Tool{
		Name: "find", Title: "Find things", Description: "Find things by query.", InputSchema: schema,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)},
	}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	hub := startHub(t, &config.Config{Servers: map[string]config.Server{"docs": memServer(srv)}}, nil, nil)

	got := hub.Tools()
	want := []tool.Tool{(tool.Tool{
		Name: "docs__find", Server: "docs", OriginalName: "find", Title: "Find things",
		Description: "Find things by query.",
		InputSchema: json.RawMessage(`{"properties":{"q":{"type":"string"}},"required":["q"],"type":"object"}`),
		Annotations: &tool.Annotations{ReadOnlyHint: new(true), OpenWorldHint: new(false)},
	}).WithHash()}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Tools() (-want +got):\n%s", diff)
	}
}

func TestHubListChanged(t *testing.T) {
	// The default revision gets notifications/tools/list_changed on the
	// session; "latest" (2026-07-28) through subscriptions/listen.
	for _, version := range []string{"", "2025-06-18", "latest"} {
		t.Run("version="+version, func(t *testing.T) { testListChanged(t, version) })
	}
}

func testListChanged(t *testing.T, version string) {
	checkGoroutines(t)
	srv := newServer("live", nil, "one", "two")
	got := make(changes, 16)
	hub := startHub(t, &config.Config{Servers: map[string]config.Server{"live": memServer(srv)}},
		&upstream.HubOptions{ProtocolVersion: version}, got.onChange)
	wantVersion := map[string]string{"": upstream.DefaultProtocolVersion, "latest": "2026-07-28"}[version]
	if wantVersion == "" {
		wantVersion = version
	}
	if st := statusOf(t, hub, "live"); st.ProtocolVersion != wantVersion {
		t.Errorf("negotiated %q, want %q", st.ProtocolVersion, wantVersion)
	}

	steps := []struct {
		name   string
		change func()
		want   changeSummary
	}{
		{"connect", func() {}, changeSummary{Server: "live", Added: []string{"live__one", "live__two"}}},
		{"add", func() { addTextTool(srv, "three", "Third.", "3") }, changeSummary{Server: "live", Added: []string{"live__three"}}},
		{"edit", func() { addTextTool(srv, "one", "A new description.", "1") }, changeSummary{Server: "live", Changed: []string{"live__one"}}},
		{"remove", func() { srv.RemoveTools("two") }, changeSummary{Server: "live", Removed: []string{"live__two"}}},
	}
	for _, step := range steps {
		step.change()
		if diff := cmp.Diff(step.want, summarize(got.next(t))); diff != "" {
			t.Errorf("%s: change (-want +got):\n%s", step.name, diff)
		}
	}
	if diff := cmp.Diff([]string{"live__one", "live__three"}, toolNames(hub.Tools())); diff != "" {
		t.Errorf("Tools() after changes (-want +got):\n%s", diff)
	}
	for _, tool := range hub.Tools() {
		if tool.Name == "live__one" && tool.Description != "A new description." {
			t.Errorf("live__one description = %q, want the new one", tool.Description)
		}
	}
}

var validName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestHubNamespacing(t *testing.T) {
	checkGoroutines(t)
	long := strings.Repeat("x", 70)
	servers := map[string]*mcp.Server{
		"a":                                      newServer("a", nil, "search", "a.b", "a_b"),
		"b":                                      newServer("b", nil, "search"),
		"github":                                 newServer("github", nil, long, long+"y"),
		"my server with a very long name indeed": newServer("long", nil, "search"),
	}
	cfg := &config.Config{Servers: map[string]config.Server{}}
	for name, srv := range servers {
		cfg.Servers[name] = memServer(srv)
	}
	hub := startHub(t, cfg, nil, nil)

	tools := hub.Tools()
	if len(tools) != 7 {
		t.Fatalf("got %d tools, want 7: %v", len(tools), toolNames(tools))
	}
	seen := map[string]bool{}
	ctx := context.Background()
	for _, tool := range tools {
		if !validName.MatchString(tool.Name) {
			t.Errorf("qualified name %q is not a valid function name", tool.Name)
		}
		if seen[tool.Name] {
			t.Errorf("qualified name %q used twice", tool.Name)
		}
		seen[tool.Name] = true
		if tool.Name != upstream.QualifiedName(tool.Server, tool.OriginalName) {
			t.Errorf("tool %q: name is not QualifiedName(%q, %q)", tool.Name, tool.Server, tool.OriginalName)
		}
		// Every call reaches the tool's own server under its original name.
		res, err := hub.Call(ctx, tool.Name, nil)
		if err != nil {
			t.Errorf("Call(%s): %v", tool.Name, err)
			continue
		}
		if want := ":" + tool.OriginalName; !strings.HasSuffix(res.Content, want) {
			t.Errorf("Call(%s) = %q, want an answer from tool %q", tool.Name, res.Content, tool.OriginalName)
		}
	}
	for _, name := range []string{"a__search", "b__search"} {
		if !seen[name] {
			t.Errorf("no tool %s in %v", name, toolNames(tools))
		}
	}
}

func TestQualifiedName(t *testing.T) {
	tests := []struct {
		server, tool, want string
	}{
		{"github", "create_issue", "github__create_issue"},
		{"my-server", "get-thing", "my-server__get-thing"},
		{"fs", "read.file", "fs__read_file_" + "*"},
		{"a.b", "t", "a_b-*__t"},
		{"x__y", "t", "x_y-*__t"},
		{"s", strings.Repeat("t", 80), "s__" + strings.Repeat("t", 52) + "_*"},
	}
	for _, tt := range tests {
		t.Run(tt.server+"/"+tt.tool, func(t *testing.T) {
			got := upstream.QualifiedName(tt.server, tt.tool)
			if !validName.MatchString(got) {
				t.Errorf("QualifiedName = %q, not a valid function name", got)
			}
			pattern := "^" + strings.ReplaceAll(regexp.QuoteMeta(tt.want), `\*`, "[0-9a-f]+") + "$"
			if !regexp.MustCompile(pattern).MatchString(got) {
				t.Errorf("QualifiedName(%q, %q) = %q, want %s", tt.server, tt.tool, got, tt.want)
			}
			if again := upstream.QualifiedName(tt.server, tt.tool); again != got {
				t.Errorf("not deterministic: %q then %q", got, again)
			}
		})
	}

	// Names that sanitize or truncate alike still get distinct qualified
	// names, and the server part always ends at the first "__".
	seen := map[string]string{}
	prefix := strings.Repeat("p", 60)
	for _, server := range []string{"s", "s.", "s_", "s__", "a__b", "a", strings.Repeat("long", 10)} {
		for _, tool := range []string{"t", "t.", "t_", "b__t", "__t", prefix + "1", prefix + "2", "", "ü"} {
			q := upstream.QualifiedName(server, tool)
			key := server + "\x00" + tool
			if other, ok := seen[q]; ok {
				t.Errorf("QualifiedName collision: %q for %q and %q", q, key, other)
			}
			seen[q] = key
			if !validName.MatchString(q) {
				t.Errorf("QualifiedName(%q, %q) = %q: not a valid function name", server, tool, q)
			}
		}
	}
}

func TestHubAllowDeny(t *testing.T) {
	checkGoroutines(t)
	srv := newServer("s", nil, "get_user", "get_secret", "delete_user", "list_users")
	sc := memServer(srv)
	sc.AllowedTools = []string{"get_*", "list_users"}
	sc.DisabledTools = []string{"get_secret"}
	hub := startHub(t, &config.Config{Servers: map[string]config.Server{"s": sc}}, nil, nil)

	if diff := cmp.Diff([]string{"s__get_user", "s__list_users"}, toolNames(hub.Tools())); diff != "" {
		t.Errorf("Tools() (-want +got):\n%s", diff)
	}
	if st := statusOf(t, hub, "s"); st.Tools != 2 || st.Disabled != 2 {
		t.Errorf("status tools=%d disabled=%d, want 2 and 2", st.Tools, st.Disabled)
	}
	for _, name := range []string{"s__get_secret", "s__delete_user"} {
		_, err := hub.Call(context.Background(), name, nil)
		if !errors.Is(err, upstream.ErrToolDisabled) || !strings.Contains(err.Error(), "server s") {
			t.Errorf("Call(%s) error = %v, want ErrToolDisabled naming server s", name, err)
		}
	}
}

func TestHubCall(t *testing.T) {
	checkGoroutines(t)
	srv := newServer("s", nil, "plain")
	type sumArgs struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "sum", Description: "Add."}, func(_ context.Context, _ *mcp.CallToolRequest, in sumArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(in.A + in.B)}}}, nil, nil
	})
	srv.AddTool(&mcp.Tool{Name: "fails", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "quota exceeded"}}}, nil
	})
	srv.AddTool(&mcp.Tool{Name: "throws", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, errors.New("database is down")
	})
	hub := startHub(t, &config.Config{Servers: map[string]config.Server{"s": memServer(srv)}}, nil, nil)

	tests := []struct {
		name, tool, args string
		want             tool.Result
		wantErr          error
		errMentions      []string
	}{
		{name: "ok", tool: "s__sum", args: `{"a":2,"b":3}`, want: tool.Result{Content: "5"}},
		{name: "no args", tool: "s__plain", want: tool.Result{Content: "s:plain"}},
		{name: "null args", tool: "s__plain", args: "null", want: tool.Result{Content: "s:plain"}},
		{name: "tool error", tool: "s__fails", args: `{}`, want: tool.Result{Content: "quota exceeded", IsError: true}},
		{name: "handler error", tool: "s__throws", args: `{}`, want: tool.Result{Content: "error: database is down", IsError: true}},
		{name: "schema violation", tool: "s__sum", args: `{"a":"x"}`, want: tool.Result{IsError: true}},
		{name: "unknown tool", tool: "s__nope", wantErr: upstream.ErrUnknownTool, errMentions: []string{"s__nope"}},
		{name: "array args", tool: "s__sum", args: `[1,2]`, wantErr: upstream.ErrInvalidArguments, errMentions: []string{"s__sum", "server s"}},
		{name: "number args", tool: "s__sum", args: `3`, wantErr: upstream.ErrInvalidArguments},
		{name: "broken json", tool: "s__sum", args: `{"a":`, wantErr: upstream.ErrInvalidArguments},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := hub.Call(context.Background(), tt.tool, json.RawMessage(tt.args))
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("error = %v, want %v", err, tt.wantErr)
				}
				for _, m := range tt.errMentions {
					if !strings.Contains(err.Error(), m) {
						t.Errorf("error %q does not mention %q", err, m)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.want.Content == "" && tt.want.IsError {
				// Only the flag is ours to check; the message is the SDK's.
				if !got.IsError || got.Content == "" {
					t.Errorf("got %+v, want an error result with a message", got)
				}
				return
			}
			if diff := cmp.Diff(tt.want, got, ignoreRaw); diff != "" {
				t.Errorf("Call (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHubCallCancel(t *testing.T) {
	checkGoroutines(t)
	srv := newServer("s", nil)
	started := make(chan struct{})
	serverSaw := make(chan error, 1)
	srv.AddTool(&mcp.Tool{Name: "wait", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		close(started)
		<-ctx.Done()
		serverSaw <- ctx.Err()
		return nil, ctx.Err()
	})
	hub := startHub(t, &config.Config{Servers: map[string]config.Server{"s": memServer(srv)}}, nil, nil)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := hub.Call(ctx, "s__wait", nil)
		done <- err
	}()
	<-started
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Call error = %v, want context.Canceled", err)
	}
	// The cancellation reaches the server (notifications/cancelled).
	if err := <-serverSaw; !errors.Is(err, context.Canceled) {
		t.Errorf("server's ctx ended with %v, want context.Canceled", err)
	}
}

func TestHubOneBrokenServer(t *testing.T) {
	checkGoroutines(t)
	good := newServer("good", nil, "ping")
	cfg := &config.Config{Servers: map[string]config.Server{
		"good": memServer(good),
		"refuses": {Dial: func(context.Context) (io.ReadWriteCloser, error) {
			return nil, errors.New("connection refused")
		}},
		// Nobody reads the other end: initialize never gets an answer.
		"silent": {Timeout: 200 * time.Millisecond, Dial: func(context.Context) (io.ReadWriteCloser, error) {
			_, clientSide := net.Pipe()
			return clientSide, nil
		}},
		"off": {Disabled: true, Command: "does-not-exist"},
	}}
	hub := startHub(t, cfg, nil, nil)

	got := map[string]upstream.State{}
	for _, st := range hub.Status() {
		got[st.Name] = st.State
		if st.State == upstream.StateFailed && (st.Err == nil || !strings.Contains(st.Err.Error(), st.Name)) {
			t.Errorf("%s: error %v does not name the server", st.Name, st.Err)
		}
	}
	want := map[string]upstream.State{"good": upstream.StateReady, "refuses": upstream.StateFailed, "silent": upstream.StateFailed, "off": upstream.StateDisabled}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
	if err := statusOf(t, hub, "silent").Err; !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("silent server error = %v, want a deadline", err)
	}
	if res, err := hub.Call(context.Background(), "good__ping", nil); err != nil || res.Content != "good:ping" {
		t.Errorf("Call(good__ping) = %+v, %v", res, err)
	}
}

func TestHubServerGoesAway(t *testing.T) {
	checkGoroutines(t)
	srv := newServer("s", nil, "ping")
	var sessions = make(chan *mcp.ServerSession, 4)
	sc := config.Server{Dial: func(ctx context.Context) (io.ReadWriteCloser, error) {
		ss, conn, err := connectPipe(ctx, srv)
		if err != nil {
			return nil, err
		}
		sessions <- ss
		return conn, nil
	}}
	got := make(changes, 16)
	hub := startHub(t, &config.Config{Servers: map[string]config.Server{"s": sc}},
		&upstream.HubOptions{MaxRestarts: -1}, got.onChange)
	got.next(t) // the initial Added

	(<-sessions).Close()
	if diff := cmp.Diff(changeSummary{Server: "s", Removed: []string{"s__ping"}}, summarize(got.next(t))); diff != "" {
		t.Errorf("change after the server left (-want +got):\n%s", diff)
	}
	if tools := hub.Tools(); len(tools) != 0 {
		t.Errorf("Tools() = %v, want none", toolNames(tools))
	}
	_, err := hub.Call(context.Background(), "s__ping", nil)
	if !errors.Is(err, upstream.ErrServerUnavailable) || !strings.Contains(err.Error(), "server s") {
		t.Errorf("Call after the server left: error = %v, want ErrServerUnavailable naming server s", err)
	}
	if st := statusOf(t, hub, "s"); st.State != upstream.StateFailed {
		t.Errorf("state = %s, want failed (MaxRestarts < 0)", st.State)
	}
}

func TestHubRestartsInMemory(t *testing.T) {
	checkGoroutines(t)
	srv := newServer("s", nil, "ping")
	sessions := make(chan *mcp.ServerSession, 4)
	sc := config.Server{Dial: func(ctx context.Context) (io.ReadWriteCloser, error) {
		ss, conn, err := connectPipe(ctx, srv)
		if err != nil {
			return nil, err
		}
		sessions <- ss
		return conn, nil
	}}
	got := make(changes, 16)
	hub := startHub(t, &config.Config{Servers: map[string]config.Server{"s": sc}},
		&upstream.HubOptions{Backoff: time.Millisecond}, got.onChange)
	got.next(t)

	(<-sessions).Close()
	for _, want := range []changeSummary{
		{Server: "s", Removed: []string{"s__ping"}},
		{Server: "s", Added: []string{"s__ping"}},
	} {
		if diff := cmp.Diff(want, summarize(got.next(t))); diff != "" {
			t.Errorf("change (-want +got):\n%s", diff)
		}
	}
	if res, err := hub.Call(context.Background(), "s__ping", nil); err != nil || res.Content != "s:ping" {
		t.Errorf("Call after restart = %+v, %v", res, err)
	}
	if st := statusOf(t, hub, "s"); st.State != upstream.StateReady || st.Restarts != 1 {
		t.Errorf("status = %s with %d restarts, want ready with 1", st.State, st.Restarts)
	}
}

// TestHubConnectAgain: the change sink is the first Connect's. A second
// Connect waits again and applies nothing anew; one that brings a sink of
// its own is refused, naming why, since its changes would go elsewhere.
func TestHubConnectAgain(t *testing.T) {
	cfg := &config.Config{Servers: map[string]config.Server{"s": memServer(newServer("s", nil, "ping"))}}
	got := make(changes, 4)
	hub := startHub(t, cfg, nil, got.onChange)
	if c := got.next(t); len(c.Added) != 1 {
		t.Fatalf("first change %+v, want s__ping added", summarize(c))
	}
	if cfgOf := hub.Config(); cfgOf != cfg {
		t.Errorf("Config() = %p, want the config given to NewHub (%p)", cfgOf, cfg)
	}
	ctx := context.Background()
	if err := hub.Connect(ctx, nil); err != nil {
		t.Errorf("Connect again without a sink: %v", err)
	}
	other := func(context.Context, tool.Change) error { return nil }
	if err := hub.Connect(ctx, other); !errors.Is(err, upstream.ErrOptions) || !strings.Contains(err.Error(), "first Connect's sink") {
		t.Errorf("Connect again with a sink: %v, want ErrOptions naming the first sink", err)
	}
	select {
	case c := <-got:
		t.Errorf("a second Connect applied %+v again", summarize(c))
	default:
	}
}

func TestHubClose(t *testing.T) {
	checkGoroutines(t)
	hub, err := upstream.NewHub(&config.Config{Servers: map[string]config.Server{"s": memServer(newServer("s", nil, "ping"))}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := hub.Connect(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := hub.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}
	if _, err := hub.Call(ctx, "s__ping", nil); !errors.Is(err, upstream.ErrClosed) {
		t.Errorf("Call after Close: %v, want ErrClosed", err)
	}
	if err := hub.Connect(ctx, nil); !errors.Is(err, upstream.ErrClosed) {
		t.Errorf("Connect after Close: %v, want ErrClosed", err)
	}
	if st := statusOf(t, hub, "s"); st.State != upstream.StateClosed {
		t.Errorf("state after Close = %s", st.State)
	}

	// A Hub closed before Connect has nothing to stop.
	idle, err := upstream.NewHub(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := idle.Close(); err != nil {
		t.Errorf("Close of an unconnected Hub: %v", err)
	}
}

func TestNewHubRejects(t *testing.T) {
	tests := []struct {
		name string
		cfg  *config.Config
		opts *upstream.HubOptions
		want error
	}{
		{"no command or url", &config.Config{Servers: map[string]config.Server{"x": {}}}, nil, config.ErrInvalid},
		{"url and command", &config.Config{Servers: map[string]config.Server{"x": {Command: "x", URL: "http://127.0.0.1:1/mcp"}}}, nil, config.ErrInvalid},
		{"empty name", &config.Config{Servers: map[string]config.Server{"": {Command: "x"}}}, nil, config.ErrInvalid},
		{"bad protocol version", nil, &upstream.HubOptions{ProtocolVersion: "june"}, upstream.ErrOptions},
		{"negative timeout", nil, &upstream.HubOptions{Timeout: -1}, upstream.ErrOptions},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := upstream.NewHub(tt.cfg, tt.opts); !errors.Is(err, tt.want) {
				t.Errorf("NewHub error = %v, want %v", err, tt.want)
			}
		})
	}
}

// TestHubUnusableServers: a Hub takes a config as loaded. A server that
// needs an input nobody gave is reported as failed with its InputError and
// never started; a disabled one that would be unusable is just disabled;
// the others work.
func TestHubUnusableServers(t *testing.T) {
	checkGoroutines(t)
	file := filepath.Join(t.TempDir(), "mcp.json")
	text := `{"inputs": [{"id": "key", "password": true}], "servers": {
	  "needs": {"command": "does-not-exist", "env": {"KEY": "${input:key}"}},
	  "off": {"url": "https://example.invalid/${input:key}", "disabled": true}
	}}`
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Servers["good"] = memServer(newServer("good", nil, "ping"))
	hub := startHub(t, cfg, nil, nil)

	st := statusOf(t, hub, "needs")
	if ie, ok := errors.AsType[*config.InputError](st.Err); st.State != upstream.StateFailed || !ok || ie.ID != "key" || !errors.Is(st.Err, config.ErrInvalid) {
		t.Errorf("needs: state %s, error %v; want failed with the InputError of input key", st.State, st.Err)
	}
	if st := statusOf(t, hub, "off"); st.State != upstream.StateDisabled || st.Err != nil {
		t.Errorf("off: state %s, error %v; want disabled without an error", st.State, st.Err)
	}
	if _, err := hub.Call(context.Background(), "good__ping", nil); err != nil {
		t.Errorf("Call(good__ping): %v", err)
	}
}

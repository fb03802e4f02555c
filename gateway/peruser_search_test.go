package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/internal/pgtest"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/store/postgres"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/upstream"
)

// TestPerUserSearchBeforeFirstLogin: before anyone has logged in to the
// per-user server remote (the shared Hub could not list it: its status is
// failed), alice's search_tools answer names remote as a server whose
// tools join at the first login, with the page to log in at, in its text
// and its structured content, on both wires, and not as a server that
// failed; bob, whom the policy keeps from remote, is never told of it.
// After alice's login her search finds remote's tool and says nothing is
// missing.
func TestPerUserSearchBeforeFirstLogin(t *testing.T) {
	as := whoamiServer(t)
	pol, err := config.ParsePolicy("policy.json", []byte(`{"rules": [{"users": ["alice"], "allow": ["remote"]}, {"users": ["bob"], "allow": ["nosuch"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	gw, err := openPerUserPolicy(t, as, store.NewMemory(), newKey(t), pol)
	if err != nil {
		t.Fatal(err)
	}
	if s := serverState(gw.Gateway, "remote"); s != upstream.StateFailed {
		t.Fatalf("remote is %s in the shared Hub before anyone logged in, want failed (nothing to list it with)", s)
	}
	search := func(user, version string) (text string, structured think.SearchAnswer) {
		t.Helper()
		c := gw.mcpClient(t, user, version)
		res, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "whose token called"}})
		if err != nil || res.IsError {
			t.Fatalf("%s %s: search_tools: %v %v", version, user, err, resultText(res))
		}
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &structured); err != nil {
			t.Fatal(err)
		}
		return resultText(res), structured
	}
	login := gw.URL + "/login/remote"
	want := think.NewIncompleteLogin(nil, nil, []think.Login{{Server: "remote", URL: login}})
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		text, structured := search("alice", version)
		var ans think.SearchAnswer
		if err := json.Unmarshal([]byte(text), &ans); err != nil {
			t.Fatalf("%s alice: answer %s: %v", version, text, err)
		}
		for where, got := range map[string]*think.Incomplete{"text": ans.Incomplete, "structured content": structured.Incomplete} {
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s alice, before any login: incomplete in the %s (-want +got):\n%s", version, where, diff)
			}
		}
		if !strings.Contains(text, login) || strings.Contains(text, "failed") {
			t.Errorf("%s alice, before any login: %s, want the login page and no failure", version, text)
		}
		if text, _ := search("bob", version); strings.Contains(text, "remote") || strings.Contains(text, "incomplete") {
			t.Errorf("%s bob (out of remote's scope): %s, want nothing of remote", version, text)
		}
	}
	gw.login(t, "alice")
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		_, ans := search("alice", version)
		if ans.Incomplete != nil || len(ans.Tools) == 0 || ans.Tools[0].Name != "remote__whoami" {
			t.Errorf("%s alice, after her login: %+v, want remote__whoami found and nothing missing", version, ans)
		}
	}
}

// TestPerUserLoginOnAnotherReplica: two replicas over one PostgreSQL,
// each of whose shared Hubs failed the per-user server remote (nobody had
// logged in). alice logs in through A; B, which no request reached since,
// lists remote's tools on its own (it hears of A's listing through the
// store's watch), so that alice's search_tools through B finds remote's
// tool and says nothing is missing, and her call through B is hers.
func TestPerUserLoginOnAnotherReplica(t *testing.T) {
	as := whoamiServer(t)
	url := pgtest.NewCluster(t).Database(t)
	key := newKey(t)
	replica := func() *perUserGateway {
		st, err := postgres.Open(context.Background(), url, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		gw, err := openPerUserOn(t, as, st, st, key, nil)
		if err != nil {
			t.Fatal(err)
		}
		return gw
	}
	a, b := replica(), replica()
	if sa, sb := serverState(a.Gateway, "remote"), serverState(b.Gateway, "remote"); sa != upstream.StateFailed || sb != upstream.StateFailed {
		t.Fatalf("remote before any login: %s on A, %s on B, want failed on both", sa, sb)
	}
	a.login(t, "alice")
	start := time.Now()
	waitUntil(t, func() bool { return serverState(b.Gateway, "remote") == upstream.StateReady },
		func() string {
			return fmt.Sprintf("remote on B after alice's login through A: %s, want ready", serverState(b.Gateway, "remote"))
		})
	t.Logf("B listed remote %v after alice's login through A", time.Since(start).Round(time.Millisecond))
	c := b.mcpClient(t, "alice")
	res, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "whose token called"}})
	if err != nil || res.IsError {
		t.Fatalf("search_tools through B: %v %v", err, resultText(res))
	}
	var ans think.SearchAnswer
	if err := json.Unmarshal([]byte(resultText(res)), &ans); err != nil {
		t.Fatal(err)
	}
	if ans.Incomplete != nil || len(ans.Tools) == 0 || ans.Tools[0].Name != "remote__whoami" {
		t.Errorf("alice's search through B after her login through A: %s, want remote__whoami found and nothing missing", resultText(res))
	}
	if who, isErr := c.whoami(t); isErr || who != "alice" {
		t.Errorf("alice's call through B: %q (error %v), want alice", who, isErr)
	}
}

// TestPerUserWhileConnecting: over a Hub of Background, while the shared
// server text is still connecting, alice's search names text as
// connecting and the per-user server remote as one to log in to; she logs
// in, and before text is through her search finds remote's tool and names
// only text as missing, and her call of it is hers; once text lists,
// nothing is missing.
func TestPerUserWhileConnecting(t *testing.T) {
	as := whoamiServer(t)
	release := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	t.Cleanup(open)
	gw, err := openPerUserOn(t, as, store.NewMemory(), store.NewMemory(), newKey(t), nil, func(cfg *config.Config, o *gateway.Options) {
		text := scopedServers(t).Servers["text"]
		cfg.Servers["text"] = config.Server{Dial: func(ctx context.Context) (io.ReadWriteCloser, error) {
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return text.Dial(ctx)
		}}
		o.Toolset.ConnectWait = -1
		o.Hub.Background = true
	})
	if err != nil {
		t.Fatal(err)
	}
	state := func(server string) upstream.State { return serverState(gw.Gateway, server) }
	waitUntil(t, func() bool { return state("remote") == upstream.StateFailed },
		func() string {
			return fmt.Sprintf("remote is %s in the shared Hub, want failed (nobody logged in)", state("remote"))
		})
	login := gw.URL + "/login/remote"
	search := func(version string) think.SearchAnswer {
		t.Helper()
		c := gw.mcpClient(t, "alice", version)
		res, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "whose token called"}})
		if err != nil || res.IsError {
			t.Fatalf("%s: search_tools: %v %v", version, err, resultText(res))
		}
		var ans think.SearchAnswer
		if err := json.Unmarshal([]byte(resultText(res)), &ans); err != nil {
			t.Fatalf("%s: answer %s: %v", version, resultText(res), err)
		}
		return ans
	}
	versions := []string{"2025-11-25", "2026-07-28"}
	for _, version := range versions {
		want := think.NewIncompleteLogin([]string{"text"}, nil, []think.Login{{Server: "remote", URL: login}})
		if diff := cmp.Diff(want, search(version).Incomplete); diff != "" {
			t.Errorf("%s, text connecting, before any login (-want +got):\n%s", version, diff)
		}
	}
	gw.login(t, "alice")
	if s := state("text"); s != upstream.StateConnecting {
		t.Fatalf("text is %s after alice's login, want still connecting (held)", s)
	}
	for _, version := range versions {
		ans := search(version)
		if diff := cmp.Diff(think.NewIncomplete([]string{"text"}, nil), ans.Incomplete); diff != "" {
			t.Errorf("%s, text connecting, after alice's login (-want +got):\n%s", version, diff)
		}
		if len(ans.Tools) == 0 || ans.Tools[0].Name != "remote__whoami" {
			t.Errorf("%s, text connecting, after alice's login: found %+v, want remote__whoami first", version, ans.Tools)
		}
	}
	if who, isErr := gw.mcpClient(t, "alice").whoami(t); isErr || who != "alice" {
		t.Errorf("alice's call while text connects: %q (error %v), want alice", who, isErr)
	}
	open()
	// Listed: its tools applied to the index (its status says ready a
	// little before).
	waitUntil(t, func() bool { return gw.Toolset().Unlisted(context.Background()) == nil },
		func() string {
			return fmt.Sprintf("after text's release: %+v unlisted, want none", gw.Toolset().Unlisted(context.Background()))
		})
	for _, version := range versions {
		if ans := search(version); ans.Incomplete != nil {
			t.Errorf("%s, everything listed: incomplete %+v, want none", version, ans.Incomplete)
		}
	}
}

// serverState is server's state in gw's shared Hub, "" when it has none.
func serverState(gw *gateway.Gateway, server string) upstream.State {
	for _, s := range gw.Toolset().Status() {
		if s.Name == server {
			return s.State
		}
	}
	return ""
}

// waitUntil waits until cond holds, and fails the test with why's words
// when it has not by the test's wait limit.
func waitUntil(t *testing.T, cond func() bool, why func() string) {
	t.Helper()
	for start := time.Now(); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Since(start) > testenv.WaitLimit() {
			t.Fatal(why())
		}
	}
}

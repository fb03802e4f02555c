package gateway_test

import (
	"context"
	"flag"
	"fmt"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/gateway/audit"
	"github.com/toolsift/toolsift/internal/pgtest"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/store/postgres"
	"github.com/toolsift/toolsift/upstream"
)

var denyStarts = flag.Int("deny.starts", 0, "starts of TestDenyByDefault (0: 20, 6 under -race)")

// windowRounds returns n, or under the race detector a third of it (at
// least 3): the window tests' rounds. .ci/run runs them in full without
// -race, where a round costs a tenth.
func windowRounds(n int) int {
	if raceEnabled {
		return max(3, n/3)
	}
	return n
}

// upstreamCounter is an upstream go-sdk server whose tools count every
// call they get, by tool.
type upstreamCounter struct {
	srv   *mcp.Server
	mu    sync.Mutex
	calls map[string]int
}

func newUpstreamCounter(name string, tools ...string) *upstreamCounter {
	u := &upstreamCounter{srv: mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil), calls: map[string]int{}}
	for _, tn := range tools {
		u.add(tn)
	}
	return u
}

func (u *upstreamCounter) add(tn string) {
	u.srv.AddTool(&mcp.Tool{Name: tn, Description: "The " + strings.ReplaceAll(tn, "_", " ") + " tool.", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			u.mu.Lock()
			u.calls[tn]++
			u.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran " + tn}}}, nil
		})
}

func (u *upstreamCounter) count(tn string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.calls[tn]
}

// TestDenyByDefault: on a fresh PostgreSQL store, under a policy that
// gives bob docs only and alice alpha but its drop_* tools, bob and alice
// call tools out of their scope from the moment the port opens, on both
// wires (call_tool, and tools/call by name on 2026-07-28), while alpha
// connects and the index catches up, and again while alpha adds tools at
// run time (one bob may not call, one alice's deny pattern covers); the
// gateway opens as toolsift serve does, its port before the servers
// connect (HubOptions.Background). Not one of those calls reaches alpha
// (counted at alpha), each is answered as a tool no server has, and the
// audit holds out-of-scope for each call_tool one (unknown for one made
// before alpha listed the tool); alice's call of an allowed tool gets
// through (so the route is there). -deny.starts sets the starts (20, or
// 6 under -race).
func TestDenyByDefault(t *testing.T) {
	pol, err := config.ParsePolicy("policy.json", []byte(`{"rules": [
		{"users": ["bob"], "allow": ["docs"]},
		{"users": ["alice"], "allow": ["alpha"], "deny": ["alpha__drop_*"]},
	]}`))
	if err != nil {
		t.Fatal(err)
	}
	var reached, refused, audited int
	var perStart []int
	start := time.Now()
	starts := *denyStarts
	if starts <= 0 {
		starts = windowRounds(20)
	}
	for range starts { // every start, so that a failure counts them all
		r, n, a := denyStart(t, pol)
		reached += r
		refused += n
		audited += a
		perStart = append(perStart, r)
	}
	t.Logf("out-of-scope calls that reached the upstream, by start: %v", perStart)
	t.Logf("%d starts in %v: %d out-of-scope calls made, %d reached the upstream, %d audited out-of-scope", starts, time.Since(start).Round(time.Millisecond), refused, reached, audited)
}

// denyStart is one start of TestDenyByDefault: it returns how many
// out-of-scope calls reached alpha, how many were made and how many the
// audit holds as out-of-scope.
func denyStart(t *testing.T, pol *config.Policy) (reached, made, audited int) {
	ctx := context.Background()
	st, err := postgres.Open(ctx, pgtest.Start(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	alpha := newUpstreamCounter("alpha", "query", "secret", "drop_table")
	docs := newUpstreamCounter("docs", "read")
	cfg := &config.Config{Servers: map[string]config.Server{"alpha": dialed(alpha.srv), "docs": dialed(docs.srv)}}
	alog := &audit.Log{Store: st}
	// As toolsift serve opens: the port opens while the servers connect.
	gw, err := gateway.Open(ctx, cfg, &gateway.Options{Audit: alog, Policy: pol,
		Hub:     upstream.HubOptions{Background: true},
		Toolset: toolsift.Options{NoSemantic: true, Store: st}})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	srv := httptest.NewServer(asMember(gw.Handler()))
	defer srv.Close()
	var sessions []*client
	defer func() {
		for _, c := range sessions {
			c.Close()
		}
	}()

	type caller struct {
		c     *client
		byCT  bool // through call_tool, else tools/call by name
		tools []string
	}
	bob := connectAs(t, srv.URL, "bob:", "2025-11-25")
	bob26 := connectAs(t, srv.URL, "bob:", "2026-07-28")
	alice := connectAs(t, srv.URL, "alice:", "2025-11-25")
	alice26 := connectAs(t, srv.URL, "alice:", "2026-07-28")
	sessions = append(sessions, bob, bob26, alice, alice26)
	denied := []caller{
		{bob, true, []string{"alpha__secret", "alpha__export"}},
		{bob26, false, []string{"alpha__secret", "alpha__export"}},
		{alice, true, []string{"alpha__drop_table", "alpha__drop_all"}},
		{alice26, false, []string{"alpha__drop_table", "alpha__drop_all"}},
	}
	var stop atomic.Bool
	var callToolCalls, calls, wrongAnswers atomic.Int64
	var wg sync.WaitGroup
	for _, cl := range denied {
		for _, name := range cl.tools {
			wg.Go(func() {
				for !stop.Load() {
					calls.Add(1)
					var res *mcp.CallToolResult
					var err error
					if cl.byCT {
						callToolCalls.Add(1)
						res, err = cl.c.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": name}})
					} else {
						res, err = cl.c.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
					}
					switch {
					case err != nil && strings.Contains(err.Error(), "unknown tool"):
					case err == nil && res.IsError && strings.Contains(resultText(res), "unknown tool"):
					default:
						if wrongAnswers.Add(1) <= 3 {
							t.Errorf("%s, out of scope: %v %q, want unknown tool", name, err, textOf(res))
						}
					}
				}
			})
		}
	}
	// Alpha connects and is indexed; alice's allowed tool answers.
	deadline := time.Now().Add(testenv.WaitLimit())
	indexed := map[string]time.Time{}
	waitFor := func(name string) {
		for {
			if _, ok := gw.Toolset().Get(name); ok {
				indexed[name] = time.Now()
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("%s never indexed", name)
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitFor("alpha__secret")
	waitFor("alpha__drop_table")
	if text, isErr := alice.call(t, "call_tool", map[string]any{"name": "alpha__query"}); isErr || text != "ran query" {
		t.Errorf("alice's call of alpha__query: %q (isError %v), want ran query", text, isErr)
	}
	// Tools added at run time.
	alpha.add("export")
	alpha.add("drop_all")
	waitFor("alpha__export")
	waitFor("alpha__drop_all")
	time.Sleep(20 * time.Millisecond) // calls after the index caught up too
	stop.Store(true)
	wg.Wait()

	for _, tn := range []string{"secret", "export", "drop_table", "drop_all"} {
		reached += alpha.count(tn)
	}
	if reached > 0 {
		t.Errorf("%d out-of-scope calls reached alpha: secret %d, export %d, drop_table %d, drop_all %d",
			reached, alpha.count("secret"), alpha.count("export"), alpha.count("drop_table"), alpha.count("drop_all"))
	}
	if err := alog.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	wrong, unknown := 0, 0
	for rec, err := range audit.Records(ctx, st, time.Time{}) {
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case rec.Tool == "alpha__query" && rec.Outcome == "ok":
		case rec.Outcome == "out-of-scope":
			audited++
		case rec.Outcome == "unknown" && rec.Time.Before(indexed[rec.Tool]):
			// Before alpha listed it: no server had it.
			unknown++
		default:
			if wrong++; wrong <= 3 {
				t.Errorf("audit record %+v: want out-of-scope", rec)
			}
		}
	}
	if int64(audited+unknown) < callToolCalls.Load() {
		t.Errorf("%d call_tool calls out of scope, %d audited out-of-scope (or unknown before the tool was listed)", callToolCalls.Load(), audited+unknown)
	}
	return reached, int(calls.Load()), audited
}

func textOf(res *mcp.CallToolResult) string {
	if res == nil {
		return ""
	}
	return resultText(res)
}

// TestRugPullWindow: while clients call a tool (through call_tool, and
// by name on 2026-07-28), its server changes it, round after round; no
// call sent once the Hub has the change (its status names the tool as
// changed) reaches the tool, whatever the index or the proxy's own
// reading of the quarantine hold yet. Between rounds the change is
// accepted (Hub.Trust), and the calls go through again. 8 rounds, 3 under
// -race.
func TestRugPullWindow(t *testing.T) {
	up := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	add := func(v int32) {
		up.AddTool(&mcp.Tool{Name: "lookup", Description: fmt.Sprintf("Look a word up, version %d.", v), InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("ran version %d", v)}}}, nil
			})
	}
	add(0)
	// A catalog of some size, so that the index takes a while to apply
	// a listing (the window in which it lags the Hub).
	for i := range 2000 {
		up.AddTool(&mcp.Tool{Name: fmt.Sprintf("other_%d", i), Description: fmt.Sprintf("Another tool, number %d, for words.", i), InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	cfg := &config.Config{Servers: map[string]config.Server{"up": dialed(up)}}
	ts, hub := openToolset(t, cfg)
	px, err := gateway.NewProxy(ts, hub, &gateway.ProxyOptions{PinnedTools: []string{"up__lookup"}})
	if err != nil {
		t.Fatal(err)
	}
	c25 := connect(t, px.NewServer(), "2025-11-25")
	c26 := connect(t, px.NewServer(), "2026-07-28")
	if text, isErr := c25.call(t, "call_tool", map[string]any{"name": "up__lookup"}); isErr || text != "ran version 0" {
		t.Fatalf("first seen: %q (isError %v)", text, isErr)
	}
	changedSeen := func() bool {
		for _, st := range hub.Status() {
			for _, c := range st.Changed {
				if c.Name == "up__lookup" {
					return true
				}
			}
		}
		return false
	}
	rounds := windowRounds(8)
	var after, leaked, through int
	for round := int32(1); round <= int32(rounds); round++ {
		var seen, stop atomic.Bool
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, call := range []func() (*mcp.CallToolResult, error){
			func() (*mcp.CallToolResult, error) {
				return c25.CallTool(context.Background(), &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "up__lookup"}})
			},
			func() (*mcp.CallToolResult, error) {
				return c26.CallTool(context.Background(), &mcp.CallToolParams{Name: "up__lookup", Arguments: map[string]any{}})
			},
			func() (*mcp.CallToolResult, error) {
				return c26.CallTool(context.Background(), &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "up__lookup"}})
			},
		} {
			wg.Go(func() {
				for !stop.Load() {
					sentAfter := seen.Load()
					res, err := call()
					ran := err == nil && !res.IsError && strings.HasPrefix(resultText(res), "ran version")
					mu.Lock()
					if ran && !sentAfter {
						through++
					}
					if sentAfter {
						after++
						if ran {
							leaked++
							if leaked <= 3 {
								t.Errorf("round %d: a call sent after the Hub saw the change ran: %q", round, resultText(res))
							}
						}
					}
					mu.Unlock()
				}
			})
		}
		time.Sleep(5 * time.Millisecond)
		add(round)
		for deadline := time.Now().Add(testenv.WaitLimit()); !changedSeen(); {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the Hub never saw the change", round)
			}
		}
		seen.Store(true)
		time.Sleep(20 * time.Millisecond)
		stop.Store(true)
		wg.Wait()
		if _, err := hub.Trust(context.Background(), "up"); err != nil {
			t.Fatal(err)
		}
		px.ToolsChanged()
	}
	t.Logf("%d rounds: %d calls sent after the Hub saw a change, %d of them ran; %d calls ran before", rounds, after, leaked, through)
	if after == 0 || through == 0 {
		t.Errorf("%d calls after the change, %d before that ran: the test raced nothing", after, through)
	}
}

// TestPerUserDenyPattern: on the per-user path, a deny pattern holds for
// the caller's own session: dave, allowed the per-user server remote but
// denied its whoami, logs in (his scope holds the server) and calls
// whoami by name and through call_tool, on both wires, before and after
// alice's login put remote's tools in the catalog; each call is answered
// as a tool no server has, never by the server (whose whoami answers its
// caller), and logged out-of-scope; alice's call is answered as hers.
func TestPerUserDenyPattern(t *testing.T) {
	ctx := context.Background()
	as := whoamiServer(t)
	pol, err := config.ParsePolicy("policy.json", []byte(`{"rules": [{"users": ["alice"], "allow": ["remote"]}, {"users": ["dave"], "allow": ["remote"], "deny": ["remote__whoami"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	gw, err := openPerUserPolicy(t, as, store.NewMemory(), newKey(t), pol)
	if err != nil {
		t.Fatal(err)
	}
	gw.login(t, "dave")
	dave := map[string]*client{"2025-11-25": gw.mcpClient(t, "dave", "2025-11-25"), "2026-07-28": gw.mcpClient(t, "dave", "2026-07-28")}
	refused := func(when string) {
		t.Helper()
		for version, c := range dave {
			res, err := c.CallTool(ctx, &mcp.CallToolParams{Name: "remote__whoami", Arguments: map[string]any{}})
			if err == nil {
				t.Errorf("%s, dave (%s) calling remote__whoami by name: %q, want unknown tool", when, version, resultText(res))
			} else if !strings.Contains(err.Error(), `unknown tool "remote__whoami"`) {
				t.Errorf("%s, dave (%s) calling remote__whoami by name: %v, want unknown tool", when, version, err)
			}
			if text, isErr := c.call(t, "call_tool", map[string]any{"name": "remote__whoami"}); !isErr || !strings.Contains(text, `unknown tool: "remote__whoami"`) {
				t.Errorf("%s, dave (%s) through call_tool: %q (isError %v), want unknown tool", when, version, text, isErr)
			}
		}
	}
	refused("before alice's login")
	gw.login(t, "alice")
	alice := gw.mcpClient(t, "alice")
	if text, isErr := alice.whoami(t); isErr || text != "alice" {
		t.Fatalf("alice's call = %q (isError %v)", text, isErr)
	}
	refused("after alice's login")
	if n := len(regexp.MustCompile(`user=dave .*tool=remote__whoami outcome=out-of-scope`).FindAllString(gw.Log.String(), -1)); n < 4 {
		t.Errorf("%d calls of dave's logged out-of-scope, want his 4 through call_tool at least:\n%s", n, gw.Log.String())
	}
	if n := strings.Count(gw.Log.String(), "tool=remote__whoami outcome=ok"); n != 1 {
		t.Errorf("%d calls of remote__whoami logged ok, want alice's one:\n%s", n, gw.Log.String())
	}
}

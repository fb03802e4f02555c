package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/internal/pgtest"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/store/postgres"
	"github.com/toolsift/toolsift/upstream"
)

// TestPolicyFromFirstSecond: on a fresh PostgreSQL store, with the port
// open before the servers connect (HubOptions.Background, as toolsift
// serve opens) and math slower to connect than text, bob (team b, text
// only) is held to his scope on every route from his first request on,
// both wires, while math connects and the index catches up: his lists
// (tools, resources, templates, prompts) never hold math's, his
// search_tools never names math (found, omitted or connecting), and each
// of math's routes (tools/call, call_tool, resources/read of a resource
// and of a template, prompts/get, completion/complete,
// resources/subscribe) answers him as for a server that does not exist,
// asked just before or just after. Alice (team a) reaches math once it is
// ready, so the routes are there.
func TestPolicyFromFirstSecond(t *testing.T) {
	pol, err := config.ParsePolicy("policy.json", []byte(testPolicy))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := postgres.Open(ctx, pgtest.Start(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg := scopedServers(t)
	slow := func(name string, d time.Duration) {
		s := cfg.Servers[name]
		dial := s.Dial
		s.Dial = func(ctx context.Context) (io.ReadWriteCloser, error) {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return dial(ctx)
		}
		cfg.Servers[name] = s
	}
	slow("math", 600*time.Millisecond)
	slow("text", 150*time.Millisecond)
	gw, err := gateway.Open(ctx, cfg, &gateway.Options{Policy: pol,
		Hub:     upstream.HubOptions{Background: true},
		Toolset: toolsift.Options{NoSemantic: true, Store: st, Pin: []string{"*"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	// Closed after the sessions (connectAs's cleanups run first).
	hs := httptest.NewServer(asMember(gw.Handler()))
	t.Cleanup(hs.Close)
	srv := hs.URL

	mathReady := func() bool { return serverState(gw, "math") == upstream.StateReady }
	// Both wires ask in every round, from the first moment on.
	versions := []string{"2025-11-25", "2026-07-28"}
	bobs := map[string]*client{}
	for _, v := range versions {
		bobs[v] = connectAs(t, srv, "bob:b", v)
	}
	rounds, inWindow := 0, 0
	after := 0 // rounds once math is ready and its tools indexed
	deadline := time.Now().Add(testenv.WaitLimit())
	for after < 3 {
		if time.Now().After(deadline) {
			t.Fatal("math never became ready")
		}
		ready := mathReady()
		if _, ok := gw.Toolset().Get("math__add"); ready && ok {
			after++
		} else {
			inWindow++
		}
		rounds++
		for _, version := range versions {
			bob := bobs[version]
			for kind, items := range lists(t, bob) {
				for _, it := range items {
					if strings.Contains(it, "math") {
						t.Errorf("%s round %d: bob's %s list holds %s", version, rounds, kind, it)
					}
				}
			}
			for _, q := range []string{"add two numbers and return their sum", "math__add", "explain a topic"} {
				b, _ := json.Marshal(bob.search(t, q, 5))
				if strings.Contains(string(b), "math") {
					t.Errorf("%s round %d: bob's search_tools(%q) names math: %s", version, rounds, q, b)
				}
			}
			before := answers(t, bob, "nosuch")
			got := answers(t, bob, "math")
			later := answers(t, bob, "nosuch")
			if cmp.Diff(before, got) != "" && cmp.Diff(later, got) != "" {
				t.Errorf("%s round %d (math ready %v): bob's answers for math differ from those for a server that does not exist (-nosuch +math):\n%s",
					version, rounds, ready, cmp.Diff(before, got))
			}
		}
	}
	t.Logf("%d rounds on both wires, %d of them before math was ready and indexed", rounds, inWindow)
	if inWindow == 0 {
		t.Errorf("no round ran while math connected: the window was not tested")
	}
	for _, version := range versions {
		alice := connectAs(t, srv, "alice:a", version)
		if got := answers(t, alice, "math"); got["resources/read"] != "ok" || got["prompts/get"] != "ok" || got["call_tool"] != "ok: math.add" {
			t.Errorf("%s: alice's answers for math once it is ready: %v", version, got)
		}
	}
}

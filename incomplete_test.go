package toolsift_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/internal/testserver"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/upstream"
)

// openGated opens a Toolset over a Background Hub of three servers: fast
// (lists at once), slow (lists when release is closed or sent to) and
// broken (fails at once), with ConnectWait wait. It returns once broken
// has failed and fast is indexed.
func openGated(t *testing.T, ctx context.Context, wait time.Duration, release <-chan struct{}) (*toolsift.Toolset, *upstream.Hub) {
	t.Helper()
	ready := make(chan struct{})
	close(ready)
	cfg := &config.Config{Servers: map[string]config.Server{
		"fast":   gatedServer("forecast", "Get the weather forecast for a city.", ready),
		"slow":   gatedServer("convert", "Convert an amount between currencies.", release),
		"broken": {Dial: func(context.Context) (io.ReadWriteCloser, error) { return nil, errors.New("refused") }},
	}}
	hub, err := upstream.NewHub(cfg, &upstream.HubOptions{Background: true, Store: dirStore(t, t.TempDir())})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := toolsift.OpenHub(ctx, hub, &toolsift.Options{NoSemantic: true, ConnectWait: wait})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ts.Close() })
	if still := hub.WaitListed(ctx, "fast", "broken"); still != nil {
		t.Fatalf("%v never through", still)
	}
	return ts, hub
}

// TestAnswersSayWhatIsMissing: with no wait (ConnectWait < 0), every
// answer of a Toolset whose server is still connecting says so, and names
// the failed server, the same way in a step, a selection, an explanation,
// a search with schemas and the loop's search_tools answer; a call of the
// connecting server's tool says it is still connecting rather than
// unknown.
func TestAnswersSayWhatIsMissing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testenv.WaitLimit())
	defer cancel()
	release := make(chan struct{})
	defer close(release)
	ts, _ := openGated(t, ctx, -1, release)
	want := think.NewIncomplete([]string{"slow"}, []string{"broken"})
	ans, _, err := ts.Find(ctx, "convert currency", 5, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, ans.Incomplete); diff != "" {
		t.Errorf("Find's Incomplete (-want +got):\n%s", diff)
	}
	for _, f := range ans.Tools {
		if f.Server == "slow" {
			t.Errorf("Find found %s before slow listed", f.Name)
		}
	}
	text, _, err := ts.SearchTools(ctx, json.RawMessage(`{"query":"convert currency"}`))
	if err != nil {
		t.Fatal(err)
	}
	var loop struct {
		Tools      []struct{ Name string }
		Incomplete *think.Incomplete
	}
	if err := json.Unmarshal([]byte(text), &loop); err != nil {
		t.Fatalf("SearchTools answered %s: %v", text, err)
	}
	if diff := cmp.Diff(want, loop.Incomplete); diff != "" {
		t.Errorf("SearchTools' incomplete (-want +got):\n%s\nanswer: %s", diff, text)
	}
	off, err := ts.Think(ctx, think.Request{Query: retrieval.Query{Task: "convert 10 euros to francs"}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, off.Incomplete); diff != "" {
		t.Errorf("Think's Incomplete (-want +got):\n%s", diff)
	}
	sel, err := ts.Select(ctx, []tool.Message{{Role: tool.RoleUser, Content: "convert 10 euros to francs"}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, sel.Incomplete); diff != "" {
		t.Errorf("Select's Incomplete (-want +got):\n%s", diff)
	}
	ex, err := ts.Explain(ctx, think.Request{Query: retrieval.Query{Task: "convert 10 euros to francs"}}, "slow__convert")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, ex.Offer.Incomplete); diff != "" {
		t.Errorf("Explain's Incomplete (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, ts.Unlisted(ctx)); diff != "" {
		t.Errorf("Unlisted (-want +got):\n%s", diff)
	}
	_, err = ts.Call(ctx, "slow__convert", nil)
	if !errors.Is(err, tool.ErrUnavailable) || !strings.Contains(err.Error(), "server slow is still connecting") {
		t.Errorf("Call(slow__convert) while slow connects: %v, want tool.ErrUnavailable saying slow is still connecting", err)
	}
	if _, err := ts.Call(ctx, "fast__nothing", nil); !errors.Is(err, tool.ErrUnknown) {
		t.Errorf("Call(fast__nothing): %v, want tool.ErrUnknown: fast is listed", err)
	}
}

// TestConnectWaitWaits: a search, a step and a call made while a server
// is still connecting wait for it (ConnectWait) and answer with its
// tools, naming only the failed server; a bounded wait that ends first
// answers with what there is and says so.
func TestConnectWaitWaits(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testenv.WaitLimit())
	defer cancel()

	t.Run("bounded", func(t *testing.T) {
		release := make(chan struct{})
		defer close(release)
		ts, hub := openGated(t, ctx, 50*time.Millisecond, release)
		ans, _, err := ts.Find(ctx, "convert currency", 5, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(think.NewIncomplete([]string{"slow"}, []string{"broken"}), ans.Incomplete); diff != "" {
			t.Errorf("Find after a wait that ended first (-want +got):\n%s", diff)
		}
		if connecting, _ := hub.Unlisted(ctx); !slices.Equal(connecting, []string{"slow"}) {
			t.Errorf("slow is not connecting any more (%v): the bounded wait proves nothing", connecting)
		}
	})

	for _, c := range []struct {
		name string
		ask  func(ts *toolsift.Toolset) (found []string, in *think.Incomplete, err error)
	}{
		{"Find", func(ts *toolsift.Toolset) ([]string, *think.Incomplete, error) {
			ans, _, err := ts.Find(ctx, "convert currency", 5, 0, nil)
			var names []string
			for _, f := range ans.Tools {
				names = append(names, f.Name)
			}
			return names, ans.Incomplete, err
		}},
		{"Think", func(ts *toolsift.Toolset) ([]string, *think.Incomplete, error) {
			off, err := ts.Think(ctx, think.Request{Query: retrieval.Query{Task: "convert 10 euros to francs"}})
			return off.Names(), off.Incomplete, err
		}},
		{"Select", func(ts *toolsift.Toolset) ([]string, *think.Incomplete, error) {
			sel, err := ts.Select(ctx, []tool.Message{{Role: tool.RoleUser, Content: "convert 10 euros to francs"}})
			return sel.Names(), sel.Incomplete, err
		}},
		{"Call", func(ts *toolsift.Toolset) ([]string, *think.Incomplete, error) {
			res, err := ts.Call(ctx, "slow__convert", nil)
			if err != nil {
				return nil, nil, err
			}
			return []string{res.Content}, think.NewIncomplete(nil, []string{"broken"}), nil
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			release := make(chan struct{})
			ts, _ := openGated(t, ctx, testenv.WaitLimit(), release)
			type answer struct {
				found []string
				in    *think.Incomplete
				err   error
			}
			done := make(chan answer, 1)
			go func() {
				found, in, err := c.ask(ts)
				done <- answer{found, in, err}
			}()
			close(release)
			a := <-done
			if a.err != nil {
				t.Fatal(a.err)
			}
			if !slices.ContainsFunc(a.found, func(n string) bool { return strings.Contains(n, "convert") }) {
				t.Errorf("%s found %v, want slow's convert: it waited for slow", c.name, a.found)
			}
			if diff := cmp.Diff(think.NewIncomplete(nil, []string{"broken"}), a.in); diff != "" {
				t.Errorf("%s's Incomplete (-want +got):\n%s", c.name, diff)
			}
		})
	}
}

// TestWarmStartWaitsForNothing: a Toolset over a Background Hub whose
// servers are all listed from the cache has nothing connecting: its first
// search answers complete, with an hour's ConnectWait, and no server was
// started for it (every one is still lazy).
func TestWarmStartWaitsForNothing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testenv.WaitLimit())
	defer cancel()
	bin := testserver.Command(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(path, []byte(`{"mcpServers":{"a":{"command":"`+bin+`"},"b":{"command":"`+bin+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(dir, "cache")
	open := func() *toolsift.Toolset {
		hub, err := upstream.NewHub(cfg, &upstream.HubOptions{Background: true, Store: dirStore(t, cache)})
		if err != nil {
			t.Fatal(err)
		}
		ts, err := toolsift.OpenHub(ctx, hub, &toolsift.Options{NoSemantic: true, ConnectWait: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	cold := open()
	if _, _, err := cold.Find(ctx, "echo a text", 5, 0, nil); err != nil { // waits for both: they list, and are cached
		t.Fatal(err)
	}
	cold.Close()

	warm := open()
	defer warm.Close()
	for _, st := range warm.Status() {
		if st.State != upstream.StateLazy {
			t.Fatalf("%s is %s at a warm start, want lazy (listed from the cache)", st.Name, st.State)
		}
	}
	ans, _, err := warm.Find(ctx, "echo a text", 5, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ans.Incomplete != nil || len(ans.Tools) == 0 {
		t.Errorf("warm Find = %d tools, incomplete %+v; want tools, complete", len(ans.Tools), ans.Incomplete)
	}
	for _, st := range warm.Status() {
		if st.State != upstream.StateLazy {
			t.Errorf("%s is %s after the warm search, want lazy: nothing started, nothing waited for", st.Name, st.State)
		}
	}
}

package upstream_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/upstream"
)

// TestHubIndexHandoff follows tools from real go-sdk servers through the Hub
// into an index and out of the retriever: wired with hub.Connect(ctx, ix.Apply), the
// index holds every tool when Connect returns (it used to be empty or half
// filled), and a notifications/tools/list_changed reaches retrieval.
func TestHubIndexHandoff(t *testing.T) {
	checkGoroutines(t)
	ix := testenv.Index(t, nil, nil)
	servers := map[string]config.Server{}
	want := 0
	var live = newServer("weather", nil, "forecast", "radar")
	servers["weather"] = memServer(live)
	want += 2
	for i := range 3 {
		var names []string
		for j := range 12 {
			names = append(names, fmt.Sprintf("tool%d", j))
		}
		name := fmt.Sprintf("s%d", i)
		servers[name] = memServer(newServer(name, nil, names...))
		want += len(names)
	}
	applied := make(chan tool.Change, 16) // each change, once the index has it
	hub := startHub(t, &config.Config{Servers: servers}, nil, func(ctx context.Context, c tool.Change) error {
		err := ix.Apply(ctx, c)
		applied <- c
		return err
	})
	if got := ix.Len(); got != want {
		t.Fatalf("index holds %d tools when Connect returns, want %d", got, want)
	}
	for _, st := range hub.Status() {
		if st.ApplyErr != nil {
			t.Errorf("server %s: ApplyErr %v", st.Name, st.ApplyErr)
		}
	}

	r, err := retrieval.New(ix, &retrieval.Options{K: 3})
	if err != nil {
		t.Fatal(err)
	}
	addTextTool(live, "convert_currency", "Convert an amount of money from one currency to another.", "ok")
	// The change is applied in the Hub's own time: once the index has it,
	// the tool ranks first.
	for added := false; !added; {
		select {
		case c := <-applied:
			added = slices.ContainsFunc(c.Added, func(t tool.Tool) bool { return t.Name == "weather__convert_currency" })
		case <-time.After(waitLimit()):
			t.Fatalf("the added tool never reached the index; it has %d tools", ix.Len())
		}
	}
	matches, err := r.Retrieve(context.Background(), retrieval.Query{Task: "convert 20 euros to dollars"})
	if err != nil {
		t.Fatal(err)
	}
	if len(matches) == 0 || matches[0].Tool.Name != "weather__convert_currency" {
		t.Fatalf("the added tool does not rank first: %v; index has %d tools", matches, ix.Len())
	}
	if got := ix.Len(); got != want+1 {
		t.Errorf("index holds %d tools after the addition, want %d", got, want+1)
	}
}

// TestHubApplyErrorInStatus: a failing OnChange shows in that server's
// status and does not take the server down.
func TestHubApplyErrorInStatus(t *testing.T) {
	checkGoroutines(t)
	hub := startHub(t, &config.Config{Servers: map[string]config.Server{
		"a": memServer(newServer("a", nil, "x")),
		"b": memServer(newServer("b", nil, "y")),
	}}, nil, func(_ context.Context, c tool.Change) error {
		if c.Server == "b" {
			return fmt.Errorf("disk full")
		}
		return nil
	})
	if st := statusOf(t, hub, "b"); st.ApplyErr == nil || st.State != upstream.StateReady {
		t.Errorf("server b: state %s, ApplyErr %v; want ready with the error", st.State, st.ApplyErr)
	}
	if st := statusOf(t, hub, "a"); st.ApplyErr != nil {
		t.Errorf("server a: ApplyErr %v, want nil", st.ApplyErr)
	}
}

// TestHubRefresh: Refresh re-lists every ready server and returns after the
// change is applied, even for a server that sent no list_changed.
func TestHubRefresh(t *testing.T) {
	checkGoroutines(t)
	// A server without the listChanged capability never notifies.
	srv := newServer("quiet", &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}}, "one")
	var mu sync.Mutex
	var seen []string
	hub := startHub(t, &config.Config{Servers: map[string]config.Server{"quiet": memServer(srv)}},
		nil, func(_ context.Context, c tool.Change) error {
			mu.Lock()
			defer mu.Unlock()
			for _, a := range c.Added {
				seen = append(seen, a.Name)
			}
			return nil
		})
	addTextTool(srv, "two", "Second.", "2")
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit())
	defer cancel()
	if err := hub.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{"quiet__one", "quiet__two"}, seen); diff != "" {
		t.Errorf("tools added by the time Refresh returned (-want +got):\n%s", diff)
	}
}

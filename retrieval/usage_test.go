package retrieval_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolsift/toolsift/encoder"
	"github.com/toolsift/toolsift/internal/dataset"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/toolindex"
	"github.com/toolsift/toolsift/usage"
)

// usageCatalog is retrieval's test catalog and the everything-like tools,
// indexed with the sentence encoder.
func usageCatalog(t *testing.T) (*toolindex.Index, []tool.Tool) {
	t.Helper()
	tools, err := dataset.LoadTools("testdata/tools.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	tools = append(tools, everything...)
	return semanticIndex(t, tools...), tools
}

func newMemory(t *testing.T, o *usage.Options) *usage.Memory {
	t.Helper()
	m, err := usage.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func top(t *testing.T, r *retrieval.Retriever, ctx context.Context, task string, n int) []string {
	t.Helper()
	ms, err := r.Retrieve(ctx, retrieval.Query{Task: task})
	if err != nil {
		t.Fatal(err)
	}
	return names(ms)[:min(n, len(ms))]
}

var (
	t0    = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	alice = usage.Caller{Scope: "team", Identity: "alice"}
	bob   = usage.Caller{Scope: "team", Identity: "bob"}
)

// A request asked again in other words finds the tool the first one led
// to: through Retrieve, Search and Explain, for the caller who made the
// call; not for another identity (one identity cannot move another's
// ranking), not in another scope, and not once the tool changed.
func TestUsageLearnsRepeat(t *testing.T) {
	ix, _ := usageCatalog(t)
	mem := newMemory(t, nil)
	r := newRetriever(t, ix, &retrieval.Options{Usage: mem})
	plain := newRetriever(t, ix, nil)
	ctx := context.Background()
	const ask, again, want = "remember that alice works at acme", "keep in mind that alice is employed by acme", "create_entities"
	if got := top(t, plain, ctx, ask, 5); slices.Contains(got, want) {
		t.Fatalf("without a memory %q already ranks %s in the top 5 (%v): the test no longer shows what the memory adds", ask, want, got)
	}
	actx := usage.WithCaller(ctx, alice)
	if err := r.Record(actx, again, want, t0); err != nil {
		t.Fatal(err)
	}
	if got := top(t, r, actx, ask, 1); !slices.Equal(got, []string{want}) {
		t.Errorf("alice's Retrieve after the call: %v, want %s first", got, want)
	}
	found, err := r.Search(actx, ask, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) == 0 || found[0].Tool.Name != want || found[0].Score > 1 {
		t.Errorf("alice's Search: %v, want %s first with a score of at most 1", names(found), want)
	}
	ex, err := r.Explain(actx, retrieval.Query{Task: ask})
	if err != nil {
		t.Fatal(err)
	}
	tr := ex.Tool(want)
	if tr.Rank != 1 || tr.Usage.Calls != 1 || tr.Usage.Identities != 1 || tr.Usage.Lift <= 0 || tr.Usage.Weight <= 0 {
		t.Errorf("Explain says of %s: rank %d, usage %+v; want rank 1, learned from 1 call by 1 identity with a lift", want, tr.Rank, tr.Usage)
	}
	if len(ex.Usage) == 0 || ex.Usage[0].Tool != want {
		t.Errorf("Explanation.Usage = %+v, want %s first", ex.Usage, want)
	}
	// Others: another identity of the scope, another scope.
	for _, c := range []usage.Caller{bob, {Scope: "other", Identity: "alice"}} {
		cctx := usage.WithCaller(ctx, c)
		if diff := cmp.Diff(top(t, plain, cctx, ask, 5), top(t, r, cctx, ask, 5)); diff != "" {
			t.Errorf("%+v's ranking moved with alice's call (-without +with):\n%s", c, diff)
		}
	}
	// The same tool under another content hash: the call does not vote.
	var changed tool.Tool
	for _, tl := range everything {
		if tl.Name == want {
			changed = tl
		}
	}
	changed.Description += " It also keeps their observations."
	if _, err := ix.Upsert(ctx, changed); err != nil {
		t.Fatal(err)
	}
	ex, err = r.Explain(actx, retrieval.Query{Task: ask})
	if err != nil {
		t.Fatal(err)
	}
	if u := ex.Tool(want).Usage; u.Calls != 0 || len(ex.Usage) != 0 {
		t.Errorf("after %s changed, its old call still votes: %+v", want, ex.Usage)
	}
}

// A tool a caller may not see (outside SearchWithin's filter or the
// Servers option) is never brought back by the memory.
func TestUsageFilters(t *testing.T) {
	ix, _ := usageCatalog(t)
	mem := newMemory(t, nil)
	ctx := usage.WithCaller(context.Background(), alice)
	r := newRetriever(t, ix, &retrieval.Options{Usage: mem})
	if err := r.Record(ctx, "what will the weather be in bern next week", "weather__get_forecast", t0); err != nil {
		t.Fatal(err)
	}
	found, err := r.SearchWithin(ctx, "weather in bern next week", 5, func(tl tool.Tool) bool { return tl.Server != "weather" })
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range found {
		if m.Tool.Server == "weather" {
			t.Errorf("SearchWithin without the weather server found %s", m.Tool.Name)
		}
	}
	fs := newRetriever(t, ix, &retrieval.Options{Usage: mem, Servers: []string{"fs", "mail"}})
	for _, name := range top(t, fs, ctx, "weather in bern next week", 20) {
		if name == "weather__get_forecast" {
			t.Errorf("Servers fs, mail: Retrieve returned %s", name)
		}
	}
}

func TestUsageRecordErrors(t *testing.T) {
	ix, _ := usageCatalog(t)
	ctx := context.Background()
	r := newRetriever(t, ix, &retrieval.Options{Usage: newMemory(t, nil)})
	if err := r.Record(ctx, "read my notes", "no_such_tool", t0); !errors.Is(err, retrieval.ErrRecord) {
		t.Errorf("an unknown tool: %v, want ErrRecord", err)
	}
	if err := r.Record(ctx, "  ", "fs__read_file", t0); !errors.Is(err, retrieval.ErrRecord) {
		t.Errorf("an empty request: %v, want ErrRecord", err)
	}
	if err := newRetriever(t, ix, nil).Record(ctx, "read my notes", "fs__read_file", t0); err != nil {
		t.Errorf("without a memory: %v, want nothing done", err)
	}
}

// Poisoning (issue 45): one identity's 1,000 calls of a decoy tool after
// generic requests change no other identity's top 5, for those requests
// and for everyday ones; they do change its own (the memory works), and
// they would change the others' if one identity were enough (Support 1).
func TestUsagePoisoning(t *testing.T) {
	ix, _ := usageCatalog(t)
	decoy := tool.Tool{Name: "decoy_helper", Description: "A helpful assistant tool for any task."}
	if _, err := ix.Upsert(context.Background(), decoy); err != nil {
		t.Fatal(err)
	}
	generic := []string{"help me", "do the usual", "what can you do", "run it again", "hello there", "please do it now",
		"continue", "next one", "go on then", "thanks, now the next thing"}
	everyday := []string{"is it going to rain in bern this weekend", "send an email to ann about friday", "read notes.txt",
		"list the open pull requests", "add 2 and 3", "convert 40 dollars to euros", "what's on my calendar tomorrow"}
	ctx := context.Background()
	mallory := usage.Caller{Scope: "team", Identity: "mallory"}
	others := []usage.Caller{alice, bob, {Scope: "team", Identity: "carol"}}
	for _, support := range []int{0, 1} { // 0: the default, 2
		mem := newMemory(t, &usage.Options{Support: support})
		r := newRetriever(t, ix, &retrieval.Options{Usage: mem})
		plain := newRetriever(t, ix, nil)
		// The others have used the memory too, for their own needs.
		for i, c := range others {
			if err := r.Record(usage.WithCaller(ctx, c), everyday[i], []string{"weather__get_forecast", "mail__send_email", "fs__read_file"}[i], t0); err != nil {
				t.Fatal(err)
			}
		}
		mctx := usage.WithCaller(ctx, mallory)
		for i := range 1000 {
			req := generic[i%len(generic)]
			if i >= len(generic) {
				req = fmt.Sprintf("%s (%d)", req, i/len(generic))
			}
			if err := r.Record(mctx, req, decoy.Name, t0.Add(time.Duration(i)*time.Second)); err != nil {
				t.Fatal(err)
			}
		}
		moved := 0
		for i, c := range others {
			cctx := usage.WithCaller(ctx, c)
			for _, q := range append(slices.Clone(generic), everyday...) {
				if q == everyday[i] {
					continue // the identity's own call may move its own ranking
				}
				got, want := top(t, r, cctx, q, 5), top(t, plain, cctx, q, 5)
				if slices.Equal(got, want) {
					continue
				}
				moved++
				if support == 0 {
					t.Errorf("%s's top 5 for %q moved with mallory's calls (-without +with):\n%s", c.Identity, q, cmp.Diff(want, got))
				}
			}
		}
		if support == 1 && moved == 0 {
			t.Error("Support 1: mallory's calls moved no other identity's top 5; the test no longer shows what the rule prevents")
		}
		if own := top(t, r, mctx, "what can you do", 1); !slices.Equal(own, []string{decoy.Name}) {
			t.Errorf("mallory's own best for %q is %v, not the decoy she called 1,000 times", "what can you do", own)
		}
	}
}

// BenchmarkRetrieveUsage is one Retrieve over the test catalog (with the
// sentence encoder; the request's vectors cached, as at an agent's later
// steps) without a usage memory and with one holding n calls of other
// requests by several identities: what consulting the memory costs.
func BenchmarkRetrieveUsage(b *testing.B) {
	tools, err := dataset.LoadTools("testdata/tools.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	useOnce.Do(func() { useEnc, useErr = encoder.NewUSE(nil) })
	if useErr != nil {
		b.Fatal(useErr)
	}
	local, err := toolindex.NewLocalEmbedder(nil)
	if err != nil {
		b.Fatal(err)
	}
	ix, err := toolindex.New(local, &toolindex.Options{Semantic: useEnc})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := ix.Upsert(ctx, append(tools, everything...)...); err != nil {
		b.Fatal(err)
	}
	q := retrieval.Query{Task: "what will the weather be in bern next week"}
	for _, n := range []int{0, 256, 1024, 4096} { // 4096: usage's default MaxCalls
		b.Run(fmt.Sprintf("calls=%d", n), func(b *testing.B) {
			var o retrieval.Options
			if n > 0 {
				mem, err := usage.New(nil)
				if err != nil {
					b.Fatal(err)
				}
				o.Usage = mem
			}
			r, err := retrieval.New(ix, &o)
			if err != nil {
				b.Fatal(err)
			}
			for i := range n {
				c := usage.WithCaller(ctx, usage.Caller{Identity: fmt.Sprintf("user-%d", i%5)})
				req := fmt.Sprintf("request number %d about %s", i, tools[i%len(tools)].Description)
				if err := r.Record(c, req, tools[i%len(tools)].Name, t0.Add(time.Duration(i)*time.Second)); err != nil {
					b.Fatal(err)
				}
			}
			cctx := usage.WithCaller(ctx, usage.Caller{Identity: "user-1"})
			if _, err := r.Retrieve(cctx, q); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.Retrieve(cctx, q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// UsageEvent is the event Record keeps: recorded by hand into another
// memory, it gives the same memory; it fails as Record does.
func TestUsageEvent(t *testing.T) {
	ix, _ := usageCatalog(t)
	ctx := usage.WithCaller(context.Background(), usage.Caller{Scope: "team", Identity: "alice"})
	a, b := newMemory(t, nil), newMemory(t, nil)
	r := newRetriever(t, ix, &retrieval.Options{Usage: a})
	if err := r.Record(ctx, "read my notes", "fs__read_file", t0); err != nil {
		t.Fatal(err)
	}
	ev, err := newRetriever(t, ix, nil).UsageEvent(ctx, "read my notes", "fs__read_file", t0)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Scope != "team" || ev.Identity != "alice" || ev.Tool != "fs__read_file" || ev.Hash == "" {
		t.Errorf("UsageEvent = caller %+v, tool %q, hash %q", ev.Caller, ev.Tool, ev.Hash)
	}
	if err := b.Record(ev); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Marshal("team"), b.Marshal("team")) {
		t.Error("the event UsageEvent gives, recorded, differs from what Record keeps")
	}
	if _, err := r.UsageEvent(ctx, "read my notes", "no_such_tool", t0); !errors.Is(err, retrieval.ErrRecord) {
		t.Errorf("an unknown tool: %v, want ErrRecord", err)
	}
}

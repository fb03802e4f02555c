package retrieval_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolsift/toolsift/internal/dataset"
	"github.com/toolsift/toolsift/internal/rankopt"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/toolindex"
)

// newIndex returns an Index of testdata/tools.jsonl with the local
// embedder.
func newIndex(t testing.TB) *toolindex.Index {
	t.Helper()
	tools, err := dataset.LoadTools("testdata/tools.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	return testenv.Index(t, nil, nil, tools...)
}

func newRetriever(t testing.TB, ix *toolindex.Index, opts *retrieval.Options) *retrieval.Retriever {
	t.Helper()
	r, err := retrieval.New(ix, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func names(ms []retrieval.Match) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Tool.Name
	}
	return out
}

// TestRetrieveTop checks the first match of plain task queries in every
// mode and fusion.
func TestRetrieveTop(t *testing.T) {
	ix := newIndex(t)
	queries := []struct {
		task, want string
		notVector  bool // vectors alone get it wrong (see below)
	}{
		{"Will it rain in Lisbon this weekend? Show me the forecast.", "weather__get_forecast", false},
		{"open a new issue in the toolsift/toolsift repository about the crash", "github__create_issue", false},
		{"merge PR 42 with squash", "github__merge_pull_request", false},
		{"email the report to alice@example.com", "mail__send_email", false},
		{"what files are in the /tmp folder", "fs__list_directory", false},
		{"how much is 120 USD in euros at the exchange rate", "math__convert_currency", false},
		// Cosine similarity favours the shorter calendar__list_events
		// document, which shares "calendar events"; the lexical signal's
		// length normalisation and the name field's weight fix it in
		// hybrid mode.
		{"create a calendar event: meeting with Bob tomorrow at 10", "calendar__create_event", true},
		{"compute 10 factorial", "math__factorial", false},
	}
	rrf := retrieval.Options{Mode: retrieval.Hybrid}
	rankopt.Set(&rrf, rankopt.Features{RRF: true})
	modes := []struct {
		fusion string
		retrieval.Options
	}{
		{"rrf", rrf},
		{"weighted", retrieval.Options{Mode: retrieval.Hybrid}},
		{"", retrieval.Options{Mode: retrieval.Lexical}},
		{"", retrieval.Options{Mode: retrieval.Vector}},
	}
	for _, m := range modes {
		o := m.Options
		r := newRetriever(t, ix, &o)
		for _, q := range queries {
			if q.notVector && o.Mode == retrieval.Vector {
				continue
			}
			t.Run(fmt.Sprintf("%v/%v/%s", o.Mode, m.fusion, q.want), func(t *testing.T) {
				ms, err := r.Retrieve(context.Background(), retrieval.Query{Task: q.task})
				if err != nil {
					t.Fatal(err)
				}
				if len(ms) == 0 || ms[0].Tool.Name != q.want {
					t.Errorf("Retrieve(%q) = %v, want %s first", q.task, names(ms), q.want)
				}
				for i, m := range ms {
					if m.Score < 0 || m.Score > 1 {
						t.Errorf("match %d (%s) has score %v, want 0..1", i, m.Tool.Name, m.Score)
					}
					if i > 0 && m.Score > ms[i-1].Score {
						t.Errorf("match %d (%s) scores %v above match %d's %v", i, m.Tool.Name, m.Score, i-1, ms[i-1].Score)
					}
				}
			})
		}
	}
}

// TestRetrieveThoughtOverTask checks that the latest thought outweighs the
// task: mid-run, the agent needs what it is thinking about now.
func TestRetrieveThoughtOverTask(t *testing.T) {
	r := newRetriever(t, newIndex(t), &retrieval.Options{K: 3})
	q := retrieval.Query{
		Task:         "Find the open pull requests of toolsift/toolsift and email a summary to the team.",
		Thought:      "Now I should send the summary by email to the team.",
		Observations: []string{"PR #12: fix typo (open)\nPR #15: add retries (open)"},
	}
	ms, err := r.Retrieve(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	got := names(ms)
	if len(got) < 2 || got[0] != "mail__send_email" {
		t.Fatalf("Retrieve = %v, want mail__send_email first", got)
	}
	// The task still counts: the pull-request tool stays in the top 3.
	if !contains(got, "github__list_pull_requests") {
		t.Errorf("Retrieve = %v, want github__list_pull_requests among them", got)
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestRetrievePinnedStickyServers(t *testing.T) {
	ix := newIndex(t)
	ctx := context.Background()
	type flags struct {
		Name           string
		Pinned, Sticky bool
	}
	view := func(ms []retrieval.Match) []flags {
		out := make([]flags, len(ms))
		for i, m := range ms {
			out[i] = flags{m.Tool.Name, m.Pinned, m.Sticky}
		}
		return out
	}
	tests := []struct {
		name string
		opts retrieval.Options
		q    retrieval.Query
		want []flags
	}{
		{
			name: "pinned first, then sticky, then retrieved",
			opts: retrieval.Options{K: 1, Pinned: []string{"web__search", "no_such_tool"}},
			q:    retrieval.Query{Task: "weather forecast for Paris", Used: []string{"fs__read_file"}},
			want: []flags{
				{"web__search", true, false},
				{"fs__read_file", false, true},
				{"weather__get_forecast", false, false},
			},
		},
		{
			name: "a retrieved tool that is also used is listed once, as sticky",
			opts: retrieval.Options{K: 1},
			q:    retrieval.Query{Task: "weather forecast for Paris", Used: []string{"weather__get_forecast"}},
			want: []flags{
				{"weather__get_forecast", false, true},
				{"weather__air_quality", false, false},
			},
		},
		{
			name: "pinned and used",
			opts: retrieval.Options{K: 1, Pinned: []string{"fs__read_file"}},
			q:    retrieval.Query{Task: "weather forecast for Paris", Used: []string{"fs__read_file"}},
			want: []flags{
				{"fs__read_file", true, true},
				{"weather__get_forecast", false, false},
			},
		},
		{
			name: "no sticky",
			opts: retrieval.Options{K: 1, NoSticky: true},
			q:    retrieval.Query{Task: "weather forecast for Paris", Used: []string{"fs__read_file"}},
			want: []flags{{"weather__get_forecast", false, false}},
		},
		{
			name: "servers filter retrieved tools only",
			opts: retrieval.Options{K: 1, Servers: []string{"github"}},
			q:    retrieval.Query{Task: "create an issue about the weather forecast", Used: []string{"fs__read_file"}},
			want: []flags{
				{"fs__read_file", false, true},
				{"github__create_issue", false, false},
			},
		},
		{
			name: "empty query returns pinned and sticky only",
			opts: retrieval.Options{Pinned: []string{"web__search"}},
			q:    retrieval.Query{Used: []string{"fs__read_file"}},
			want: []flags{{"web__search", true, false}, {"fs__read_file", false, true}},
		},
		{
			name: "min score keeps only the clear winners",
			opts: retrieval.Options{K: 10, MinScore: 0.5, Mode: retrieval.Lexical},
			q:    retrieval.Query{Task: "factorial"},
			want: []flags{{"math__factorial", false, false}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRetriever(t, ix, &tt.opts)
			ms, err := r.Retrieve(ctx, tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, view(ms)); diff != "" {
				t.Errorf("Retrieve mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewInvalid(t *testing.T) {
	ix := newIndex(t)
	tests := []struct {
		name string
		ix   *toolindex.Index
		opts retrieval.Options
	}{
		{"nil index", nil, retrieval.Options{}},
		{"negative K", ix, retrieval.Options{K: -1}},
		{"bad mode", ix, retrieval.Options{Mode: 7}},
		{"min score above 1", ix, retrieval.Options{MinScore: 1.5}},
		{"negative depth", ix, retrieval.Options{Depth: -3}},
		{"negative weight", ix, retrieval.Options{Weights: retrieval.Weights{Lexical: 1, Vector: -1}}},
		{"NaN weight", ix, retrieval.Options{Weights: retrieval.Weights{Lexical: math.NaN()}}},
		{"semantic mode without a semantic embedder", ix, retrieval.Options{Mode: retrieval.Semantic}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := retrieval.New(tt.ix, &tt.opts)
			if !errors.Is(err, retrieval.ErrOptions) {
				t.Errorf("New: err = %v, want ErrOptions", err)
			}
		})
	}
}

// failingEmbedder embeds tool documents like the local embedder but fails
// on demand, to check that query embedding errors surface.
type failingEmbedder struct {
	*toolindex.LocalEmbedder
	mu   sync.Mutex
	fail bool
}

var errEmbed = errors.New("embedder down")

func (f *failingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	f.mu.Lock()
	fail := f.fail
	f.mu.Unlock()
	if fail {
		return nil, errEmbed
	}
	return f.LocalEmbedder.Embed(ctx, texts)
}

func TestRetrieveEmbedError(t *testing.T) {
	local, err := toolindex.NewLocalEmbedder(nil)
	if err != nil {
		t.Fatal(err)
	}
	emb := &failingEmbedder{LocalEmbedder: local}
	ix, err := toolindex.New(emb, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := dataset.LoadTools("testdata/tools.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Upsert(context.Background(), tools...); err != nil {
		t.Fatal(err)
	}
	emb.mu.Lock()
	emb.fail = true
	emb.mu.Unlock()
	r := newRetriever(t, ix, nil)
	if _, err := r.Retrieve(context.Background(), retrieval.Query{Task: "weather"}); !errors.Is(err, errEmbed) {
		t.Errorf("hybrid Retrieve: err = %v, want errEmbed", err)
	}
	// Lexical mode does not embed.
	r = newRetriever(t, ix, &retrieval.Options{Mode: retrieval.Lexical})
	if ms, err := r.Retrieve(context.Background(), retrieval.Query{Task: "weather"}); err != nil || len(ms) == 0 {
		t.Errorf("lexical Retrieve = %v, %v; want matches", names(ms), err)
	}
}

// TestRetrieveDuringUpdate runs retrievals while tools are upserted and
// removed (run with -race).
func TestRetrieveDuringUpdate(t *testing.T) {
	ix := newIndex(t)
	r := newRetriever(t, ix, nil)
	ctx := context.Background()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 20 {
			name := fmt.Sprintf("extra__tool_%d", i)
			if _, err := ix.Upsert(ctx, tool.Tool{Name: name, Description: "Forecast the weather on Mars."}); err != nil {
				t.Error(err)
				return
			}
			if i%2 == 0 {
				ix.Remove(name)
			}
		}
	}()
	for range 20 {
		ms, err := r.Retrieve(ctx, retrieval.Query{Task: "weather forecast"})
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) == 0 {
			t.Fatal("Retrieve found nothing")
		}
	}
	wg.Wait()
}

func TestRetrieveEmptyIndex(t *testing.T) {
	emb, err := toolindex.NewLocalEmbedder(nil)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := toolindex.New(emb, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := newRetriever(t, ix, &retrieval.Options{Pinned: []string{"missing"}})
	ms, err := r.Retrieve(context.Background(), retrieval.Query{Task: "anything at all", Used: []string{"gone"}})
	if err != nil || len(ms) != 0 {
		t.Errorf("Retrieve on an empty index = %v, %v; want nothing, no error", names(ms), err)
	}
}

package toolindex_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolsift/toolsift/toolindex"
)

func cosine(a, b []float32) float64 {
	var dot float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
	}
	return dot
}

func TestLocalEmbedderVectors(t *testing.T) {
	emb, err := toolindex.NewLocalEmbedder(nil)
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"Get the weather forecast for a city", "", "the of and", "ÜberCafé naïve"}
	vecs, err := emb.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(vecs) != len(texts) {
		t.Fatalf("got %d vectors for %d texts", len(vecs), len(texts))
	}
	for i, v := range vecs {
		if len(v) != emb.Dims() {
			t.Errorf("vector %d has length %d, want %d", i, len(v), emb.Dims())
		}
		norm := math.Sqrt(cosine(v, v))
		want := 1.0
		if i == 1 || i == 2 { // no words left: the zero vector
			want = 0
		}
		if math.Abs(norm-want) > 1e-5 {
			t.Errorf("vector %d (%q) has norm %v, want %v", i, texts[i], norm, want)
		}
	}
	again, err := emb.Embed(context.Background(), texts[:1])
	if err != nil {
		t.Fatal(err)
	}
	for i := range again[0] {
		if again[0][i] != vecs[0][i] {
			t.Fatalf("Embed is not deterministic at dimension %d", i)
		}
	}
}

// TestLocalEmbedderRanking checks the properties the design promises: a
// paraphrase of a tool's purpose is closer to that tool than to the others,
// through morphology and identifier splitting.
func TestLocalEmbedderRanking(t *testing.T) {
	docs := []string{
		"get weather forecast\n\nGet the weather forecast for a city.",
		"calculate factorial\n\nCalculate the factorial of a number.",
		"github create issue\n\nOpen a new issue in a GitHub repository.",
		"send email\n\nSend an email message to a recipient.",
		"convert currency\n\nConvert an amount between currencies using exchange rates.",
	}
	tests := []struct {
		query string
		want  int
	}{
		{"what's the weather like in Paris tomorrow", 0},
		{"weathers forecasts", 0},
		{"calculating factorials", 1},
		{"factorial of 5", 1},
		{"open an issue in my repo", 2},
		{"createIssue", 2},
		{"mail my boss", 3},
		{"how many euros is 100 dollars, currency conversion", 4},
	}
	emb, err := toolindex.NewLocalEmbedder(nil)
	if err != nil {
		t.Fatal(err)
	}
	dv, err := emb.Embed(context.Background(), docs)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			qv, err := emb.Embed(context.Background(), []string{tt.query})
			if err != nil {
				t.Fatal(err)
			}
			best, bestSim := -1, -2.0
			var sims []string
			for i, d := range dv {
				s := cosine(qv[0], d)
				sims = append(sims, fmt.Sprintf("%.3f", s))
				if s > bestSim {
					best, bestSim = i, s
				}
			}
			if best != tt.want {
				t.Errorf("closest document = %d, want %d (similarities %s)", best, tt.want, strings.Join(sims, " "))
			}
		})
	}
}

func TestNewLocalEmbedder(t *testing.T) {
	tests := []struct {
		name    string
		opts    *toolindex.LocalOptions
		wantID  string
		wantErr bool
	}{
		{name: "defaults", opts: nil, wantID: "local:v2:1024:w0.5,b0.15,c0.35:g3-5"},
		{name: "zero options", opts: &toolindex.LocalOptions{}, wantID: "local:v2:1024:w0.5,b0.15,c0.35:g3-5"},
		{name: "custom", opts: &toolindex.LocalOptions{Dims: 256, MinGram: 2, MaxGram: 4, WordWeight: 1}, wantID: "local:v2:256:w1,b0,c0:g2-4"},
		{name: "dims too small", opts: &toolindex.LocalOptions{Dims: 8}, wantErr: true},
		{name: "bad grams", opts: &toolindex.LocalOptions{MinGram: 4, MaxGram: 3}, wantErr: true},
		{name: "negative weight", opts: &toolindex.LocalOptions{WordWeight: -1, CharWeight: 1}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			emb, err := toolindex.NewLocalEmbedder(tt.opts)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("NewLocalEmbedder(%+v) = %s, want an error", tt.opts, emb.ID())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := emb.ID(); got != tt.wantID {
				t.Errorf("ID() = %q, want %q", got, tt.wantID)
			}
		})
	}
	if _, err := toolindex.NewLocalEmbedder(&toolindex.LocalOptions{Dims: 8}); !errors.Is(err, toolindex.ErrDimension) {
		t.Errorf("dims 8: err = %v, want ErrDimension", err)
	}
}

func TestLocalEmbedderCanceled(t *testing.T) {
	emb, err := toolindex.NewLocalEmbedder(nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := emb.Embed(ctx, []string{"a"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Embed with a canceled context: err = %v, want context.Canceled", err)
	}
}

func BenchmarkLocalEmbed(b *testing.B) {
	emb, err := toolindex.NewLocalEmbedder(nil)
	if err != nil {
		b.Fatal(err)
	}
	text := "calculate triangle area\n\nCalculate the area of a triangle given its base and height.\n\n" +
		"base: The base of the triangle. height: The height of the triangle. unit: The unit of measure (defaults to 'units' if not specified)."
	texts := make([]string, 100)
	for i := range texts {
		texts[i] = fmt.Sprintf("%s variant %d", text, i)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := emb.Embed(context.Background(), texts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(texts))/b.Elapsed().Seconds(), "texts/s")
}

func TestLocalEmbedderConcurrent(t *testing.T) {
	emb, err := toolindex.NewLocalEmbedder(&toolindex.LocalOptions{Dims: 128})
	if err != nil {
		t.Fatal(err)
	}
	want, err := emb.Embed(context.Background(), []string{"send an email", "read a file"})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				got, err := emb.Embed(context.Background(), []string{"send an email", "read a file"})
				if err != nil {
					t.Error(err)
					return
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("concurrent Embed differs (-want +got):\n%s", diff)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestLocalEmbedderLiterals checks that words made of digits (the literal
// values of a request) do not change a vector.
func TestLocalEmbedderLiterals(t *testing.T) {
	emb, err := toolindex.NewLocalEmbedder(nil)
	if err != nil {
		t.Fatal(err)
	}
	vecs, err := emb.Embed(context.Background(), []string{
		"area of a triangle with base 10 and height 5 on 2024-01-31",
		"area of a triangle with base and height on",
	})
	if err != nil {
		t.Fatal(err)
	}
	if c := cosine(vecs[0], vecs[1]); math.Abs(c-1) > 1e-5 {
		t.Errorf("cosine with and without numbers = %v, want 1", c)
	}
}

// TestLocalEmbedderHeading checks that the first paragraph of a text with
// several (a tool document's name) weighs more than the same words further
// down, and that a text of one paragraph is unaffected.
func TestLocalEmbedderHeading(t *testing.T) {
	emb, err := toolindex.NewLocalEmbedder(nil)
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{
		"send email\n\nDeliver a message to a recipient; sends an email.",
		"deliver message\n\nSend email to a recipient; delivers a message.",
		"send email",
		"send email\n\n",
	}
	vecs, err := emb.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	q := vecs[2]
	if named, mentioned := cosine(q, vecs[0]), cosine(q, vecs[1]); named <= mentioned {
		t.Errorf("cosine to the tool named %q = %v, not above the tool that only mentions it (%v)", texts[2], named, mentioned)
	}
	if c := cosine(vecs[2], vecs[3]); math.Abs(c-1) > 1e-5 {
		t.Errorf("a trailing blank line changed the vector: cosine %v", c)
	}
}

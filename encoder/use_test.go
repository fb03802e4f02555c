package encoder_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/toolsift/toolsift/encoder"
	"github.com/toolsift/toolsift/toolindex"
)

var _ toolindex.Embedder = (*encoder.USE)(nil)

// useReference is testdata/use_reference.json, written by
// testdata/use_reference.js from the reference JavaScript implementation.
type useReference struct {
	Source       string      `json:"source"`
	BatchOfFirst int         `json:"batch_of_first"`
	BatchVectors [][]float64 `json:"batch_vectors"`
	Texts        []struct {
		Text   string    `json:"text"`
		IDs    []int32   `json:"ids"`
		Vector []float64 `json:"vector"`
	} `json:"texts"`
}

func loadUSEReference(t testing.TB) useReference {
	t.Helper()
	b, err := os.ReadFile("testdata/use_reference.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref useReference
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	return ref
}

var newUSE = sync.OnceValues(func() (*encoder.USE, error) { return encoder.NewUSE(nil) })

func mustUSE(t testing.TB) *encoder.USE {
	t.Helper()
	u, err := newUSE()
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func cosine(a []float32, b []float64) float64 {
	var d, na, nb float64
	for i := range a {
		d += float64(a[i]) * b[i]
		na += float64(a[i]) * float64(a[i])
		nb += b[i] * b[i]
	}
	return d / math.Sqrt(na*nb)
}

// minUSECosine is the least cosine accepted between a vector and the
// reference's: the weights are stored in float16 and computed in float32.
const minUSECosine = 0.9999

// TestUSEMatchesReference embeds the fixture's texts with every matrix
// kernel the processor runs and compares pieces and vectors with the
// reference's, and the order of the tool documents for each query.
func TestUSEMatchesReference(t *testing.T) {
	ref := loadUSEReference(t)
	u := mustUSE(t)
	texts := make([]string, len(ref.Texts))
	for i, r := range ref.Texts {
		texts[i] = r.Text
	}
	for i, r := range ref.Texts {
		if diff := cmp.Diff(r.IDs, encoder.USEPieceIDs(u, r.Text), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("text %d %.40q: piece ids (-reference +got):\n%s", i, r.Text, diff)
		}
	}
	for _, kernel := range encoder.USEKernels() {
		t.Run(kernel, func(t *testing.T) {
			restore, err := encoder.SetUSEKernel(kernel)
			if err != nil {
				t.Fatal(err)
			}
			defer restore()
			var which []int // the texts embedded
			for i, r := range ref.Texts {
				if !raceEnabled || kernel != "go" || len(r.IDs) <= 8 {
					which = append(which, i)
				}
			}
			in := make([]string, len(which))
			for j, i := range which {
				in[j] = texts[i]
			}
			// All texts in one Embed call: batching must not change a vector.
			got, err := u.Embed(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			vecs := make([][]float32, len(texts))
			for j, i := range which {
				vecs[i] = got[j]
			}
			worst := 1.0
			for _, i := range which {
				r := ref.Texts[i]
				if len(vecs[i]) != 512 {
					t.Fatalf("text %d: vector of length %d, want 512", i, len(vecs[i]))
				}
				if r.Vector == nil {
					continue // the reference cannot embed a text without pieces
				}
				c := cosine(vecs[i], r.Vector)
				worst = min(worst, c)
				if c < minUSECosine {
					t.Errorf("text %d %.40q: cosine to the reference %.6f, want ≥ %v", i, r.Text, c, minUSECosine)
				}
			}
			t.Logf("%d texts, least cosine to the reference %.7f", len(which), worst)
			if len(which) == len(texts) {
				checkUSERanking(t, ref, vecs)
			}
		})
	}
}

// useFixtureDocs is the number of tool documents that open the fixture's
// texts; the others are queries.
const useFixtureDocs = 11

// checkUSERanking checks that every query of the fixture orders the tool
// documents as the reference's vectors do, but for documents whose
// reference cosines are within useRankTie of each other.
func checkUSERanking(t *testing.T, ref useReference, vecs [][]float32) {
	t.Helper()
	const useRankTie = 1e-3
	for q := useFixtureDocs; q < len(ref.Texts); q++ {
		if ref.Texts[q].Vector == nil {
			continue
		}
		want := make([]float64, useFixtureDocs)
		got := make([]float64, useFixtureDocs)
		for d := range useFixtureDocs {
			want[d] = dot64(ref.Texts[q].Vector, ref.Texts[d].Vector)
			for x := range vecs[q] {
				got[d] += float64(vecs[q][x]) * float64(vecs[d][x])
			}
		}
		for a := range useFixtureDocs {
			for b := range useFixtureDocs {
				if want[a] > want[b]+useRankTie && got[a] <= got[b] {
					t.Errorf("query %d %.40q: document %d (%.4f) no longer above document %d (%.4f)", q, ref.Texts[q].Text, a, got[a], b, got[b])
				}
			}
		}
	}
}

func dot64(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func TestUSEBatchedReference(t *testing.T) {
	// The reference's vectors for a padded batch of texts of different
	// lengths equal its vectors for the texts one by one.
	ref := loadUSEReference(t)
	u := mustUSE(t)
	for i, want := range ref.BatchVectors {
		got, err := u.Embed(context.Background(), []string{ref.Texts[i].Text})
		if err != nil {
			t.Fatal(err)
		}
		if c := cosine(got[0], want); c < minUSECosine {
			t.Errorf("text %d: cosine to the reference's batched vector %.6f", i, c)
		}
	}
}

func TestUSEConcurrentEmbedsAgree(t *testing.T) {
	u := mustUSE(t)
	texts := []string{"search flights to Paris", "create a GitHub issue", "东京の天気", ""}
	want, err := u.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			got, err := u.Embed(context.Background(), texts)
			if err != nil {
				t.Error(err)
				return
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("concurrent Embed differs (-want +got):\n%s", diff)
			}
		})
	}
	wg.Wait()
}

// TestUSEConcurrentQueriesAgree: EmbedQueries calls in flight share the
// workers (a call beside others computes with fewer goroutines), and give
// the vectors of a call alone, to the bit.
func TestUSEConcurrentQueriesAgree(t *testing.T) {
	u := mustUSE(t)
	texts := []string{"search flights to Paris", "list the open issues of a repository and close the stale ones", "东京の天気"}
	for _, kernel := range encoder.USEKernels() { // the int16 path is the assembly kernels'
		t.Run(kernel, func(t *testing.T) {
			restore, err := encoder.SetUSEKernel(kernel)
			if err != nil {
				t.Fatal(err)
			}
			defer restore()
			want, err := u.EmbedQueries(context.Background(), texts)
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for i := range 6 {
				wg.Go(func() {
					for j := range 2 {
						k := (i + j) % len(texts)
						got, err := u.EmbedQueries(context.Background(), texts[k:k+1])
						if err != nil {
							t.Error(err)
							return
						}
						if diff := cmp.Diff(want[k], got[0]); diff != "" {
							t.Errorf("concurrent EmbedQueries of text %d differs (-want +got):\n%s", k, diff)
						}
					}
				})
			}
			wg.Wait()
		})
	}
}

func TestUSEWorkersAgree(t *testing.T) {
	// Tiles do not depend on the number of goroutines, so neither do the
	// vectors, to the bit.
	texts := []string{"search flights to Paris", "", strings.Repeat("list the open issues of a repository ", 40), "东京の天気"}
	var want [][]float32
	for _, workers := range []int{1, 3, 64} {
		u, err := encoder.NewUSE(&encoder.USEOptions{Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		got, err := u.Embed(context.Background(), texts)
		if err != nil {
			t.Fatal(err)
		}
		if want == nil {
			want = got
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Workers %d differs from Workers 1 (-want +got):\n%s", workers, diff)
		}
	}
}

func TestNewUSEOptions(t *testing.T) {
	tests := []struct {
		name    string
		opts    *encoder.USEOptions
		wantErr bool
	}{
		{"nil", nil, false},
		{"one worker", &encoder.USEOptions{Workers: 1}, false},
		{"negative workers", &encoder.USEOptions{Workers: -1}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := encoder.NewUSE(tt.opts)
			if tt.wantErr {
				if !errors.Is(err, encoder.ErrOptions) {
					t.Fatalf("err = %v, want ErrOptions", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := u.ID(); got != "use-lite:v1:512" {
				t.Errorf("ID() = %q", got)
			}
		})
	}
}

func TestUSEEmbedHonoursContext(t *testing.T) {
	u := mustUSE(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := u.Embed(ctx, []string{"x"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	vecs, err := u.Embed(context.Background(), nil)
	if err != nil || len(vecs) != 0 {
		t.Fatalf("Embed(nil) = %d vectors, %v", len(vecs), err)
	}
}

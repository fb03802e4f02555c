package encoder_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
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
// reference's: the weights are stored in float16.
const minUSECosine = 0.999

func TestUSEMatchesReference(t *testing.T) {
	ref := loadUSEReference(t)
	u := mustUSE(t)
	texts := make([]string, len(ref.Texts))
	for i, r := range ref.Texts {
		texts[i] = r.Text
	}
	// All texts in one Embed call: batching must not change a vector.
	vecs, err := u.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	worst := 1.0
	for i, r := range ref.Texts {
		t.Run(r.Text[:min(len(r.Text), 40)], func(t *testing.T) {
			if diff := cmp.Diff(r.IDs, encoder.USEPieceIDs(u, r.Text), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("piece ids (-reference +got):\n%s", diff)
			}
			if len(vecs[i]) != 512 {
				t.Fatalf("vector of length %d, want 512", len(vecs[i]))
			}
			if r.Vector == nil {
				return // the reference cannot embed a text without pieces
			}
			c := cosine(vecs[i], r.Vector)
			worst = min(worst, c)
			if c < minUSECosine {
				t.Errorf("cosine to the reference %.6f, want ≥ %v", c, minUSECosine)
			}
		})
	}
	t.Logf("%d texts, least cosine to the reference %.7f", len(ref.Texts), worst)
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
				if !errors.Is(err, encoder.ErrInvalidOptions) {
					t.Fatalf("err = %v, want ErrInvalidOptions", err)
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

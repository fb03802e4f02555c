package encoder

import (
	"context"
	"math"
	"runtime"
	"sync"
)

// USEStatic is a static distillation of USE (in the manner of Model2Vec):
// USE run once over each of its 8,000 vocabulary pieces alone gives a
// table of piece vectors, and a text's vector is the normalised mean of its
// pieces' rows, each weighted by a/(a+p) for the piece's unigram
// probability p (a = 1e-3, after Arora et al.'s SIF), so that frequent
// pieces ("▁the", ".") weigh little. It reads all of a text's pieces, not
// only the first 128, and costs microseconds per text instead of
// milliseconds, at the price of word order and context.
//
// The table (8,002 × 512 float32, 16 MB) is computed on first use from the
// embedded USE weights, in about two seconds of CPU, and shared by every
// USEStatic of the process. A USEStatic is safe for concurrent use.
type USEStatic struct {
	t *useStaticTable
}

type useStaticTable struct {
	pieces *usePieces
	rows   []float32 // [vocab+2][useOutDim]
	weight []float32 // per piece id
}

var (
	useStaticOnce sync.Once
	useStaticT    *useStaticTable
	useStaticErr  error
)

// useSIF is the a of the a/(a+p) weight of a piece of probability p.
const useSIF = 1e-3

// NewUSEStatic returns the static tier of USE. The first call builds the
// table of piece vectors.
func NewUSEStatic() (*USEStatic, error) {
	useStaticOnce.Do(func() {
		w, err := loadUSE()
		if err != nil {
			useStaticErr = err
			return
		}
		n := len(w.emb) / useEmbedDim
		ids := make([][]int32, n)
		for i := range ids {
			ids[i] = []int32{int32(i)}
		}
		t := &useStaticTable{pieces: w.pieces, rows: make([]float32, n*useOutDim), weight: make([]float32, n)}
		const batch = 1024
		for s := 0; s < n; s += batch {
			for j, v := range w.forward(ids[s:min(s+batch, n)], runtime.GOMAXPROCS(0)) {
				copy(t.rows[(s+j)*useOutDim:], v)
			}
		}
		for i := range t.weight {
			p := 0.0
			if i < len(w.pieces.score) && i >= useReserved {
				p = math.Exp(w.pieces.score[i])
			}
			t.weight[i] = float32(useSIF / (useSIF + p))
		}
		useStaticT = t
	})
	if useStaticErr != nil {
		return nil, useStaticErr
	}
	return &USEStatic{t: useStaticT}, nil
}

// ID names the static tier and its dimension.
func (s *USEStatic) ID() string { return "use-lite-static:v1:512" }

// Embed returns one unit vector of 512 dimensions per text (zeros for a
// text without pieces). It fails only when ctx is done.
func (s *USEStatic) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, text := range texts {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		v := make([]float32, useOutDim)
		for _, id := range s.t.pieces.encode(text) {
			w := s.t.weight[id]
			row := s.t.rows[int(id)*useOutDim:][:useOutDim]
			for j, x := range row {
				v[j] += w * x
			}
		}
		var ss float64
		for _, x := range v {
			ss += float64(x) * float64(x)
		}
		if ss > 0 {
			inv := float32(1 / math.Sqrt(ss))
			for j := range v {
				v[j] *= inv
			}
		}
		out[i] = v
	}
	return out, nil
}

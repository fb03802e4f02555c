package encoder_test

import (
	"context"
	"math"
	"testing"

	"github.com/toolsift/toolsift/encoder"
)

func cosine32(a, b []float32) float64 {
	b64 := make([]float64, len(b))
	for i, v := range b {
		b64[i] = float64(v)
	}
	return cosine(a, b64)
}

// TestUSEQueriesMatchReference embeds the fixture's texts with
// EmbedQueries, with every kernel the processor runs, and compares each
// vector with the reference's (at the same tolerance as Embed's) and with
// Embed's, and checks the ranking of the tool documents (embedded with
// Embed) for each query (embedded with EmbedQueries).
func TestUSEQueriesMatchReference(t *testing.T) {
	ref := loadUSEReference(t)
	u := mustUSE(t)
	texts := make([]string, len(ref.Texts))
	for i, r := range ref.Texts {
		texts[i] = r.Text
	}
	for _, kernel := range encoder.USEKernels() {
		t.Run(kernel, func(t *testing.T) {
			if raceEnabled && kernel == "go" {
				t.Skip("the portable kernels are too slow under the race detector for the whole fixture; TestUSEMatchesReference covers them")
			}
			restore, err := encoder.SetUSEKernel(kernel)
			if err != nil {
				t.Fatal(err)
			}
			defer restore()
			docs, err := u.Embed(context.Background(), texts)
			if err != nil {
				t.Fatal(err)
			}
			qs, err := u.EmbedQueries(context.Background(), texts)
			if err != nil {
				t.Fatal(err)
			}
			worstRef, worstEmbed := 1.0, 1.0
			for i, r := range ref.Texts {
				c := cosine32(qs[i], docs[i])
				worstEmbed = min(worstEmbed, c)
				if c < minUSECosine {
					t.Errorf("text %d %.40q: cosine to Embed's %.6f, want ≥ %v", i, r.Text, c, minUSECosine)
				}
				if r.Vector == nil {
					continue
				}
				c = cosine(qs[i], r.Vector)
				worstRef = min(worstRef, c)
				if c < minUSECosine {
					t.Errorf("text %d %.40q: cosine to the reference %.6f, want ≥ %v", i, r.Text, c, minUSECosine)
				}
			}
			t.Logf("%d texts, least cosine to the reference %.7f, to Embed's %.7f", len(texts), worstRef, worstEmbed)
			vecs := append(docs[:useFixtureDocs:useFixtureDocs], qs[useFixtureDocs:]...)
			checkUSERanking(t, ref, vecs)
		})
	}
}

// queryVectorsPerKernel returns the kernels with an int16 path (every one
// but the portable Go) and EmbedQueries's vectors of texts on each: of
// one call of all the texts, then (when alone is set) of each alone.
func queryVectorsPerKernel(t testing.TB, u *encoder.USE, texts []string, alone bool) (kernels []string, vecs [][][]float32) {
	t.Helper()
	ctx := context.Background()
	for _, k := range encoder.USEKernels() {
		if k == "go" {
			continue
		}
		restore, err := encoder.SetUSEKernel(k)
		if err != nil {
			t.Fatal(err)
		}
		all, err := u.EmbedQueries(ctx, texts)
		if err != nil {
			restore()
			t.Fatal(err)
		}
		for _, text := range texts {
			if !alone {
				break
			}
			one, err := u.EmbedQueries(ctx, []string{text})
			if err != nil {
				restore()
				t.Fatal(err)
			}
			all = append(all, one[0])
		}
		restore()
		kernels = append(kernels, k)
		vecs = append(vecs, all)
	}
	return kernels, vecs
}

// checkSameVectors fails unless got (of kernel k) is want (of kernel
// base), to the bit; the vectors are of texts, then of texts again.
func checkSameVectors(t testing.TB, texts []string, base, k string, want, got [][]float32) {
	t.Helper()
	for i := range want {
		for d := range want[i] {
			if math.Float32bits(got[i][d]) != math.Float32bits(want[i][d]) {
				t.Fatalf("%s: vector %d (%.40q) [%d] = %v, %s's %v", k, i, texts[i%len(texts)], d, got[i][d], base, want[i][d])
			}
		}
	}
}

// FuzzUSEQueries checks that EmbedQueries (the int16 path where the
// assembly kernels run) gives Embed's vector, to a cosine of at least
// minUSECosine, for any text, and the same vectors to the bit on every
// assembly kernel: seeded with the fixture's.
func FuzzUSEQueries(f *testing.F) {
	for _, r := range loadUSEReference(f).Texts {
		f.Add(r.Text)
	}
	u := mustUSE(f)
	f.Fuzz(func(t *testing.T, text string) {
		kernels, vecs := queryVectorsPerKernel(t, u, []string{text, ""}, true)
		for i := 1; i < len(kernels); i++ { // none with the portable build
			checkSameVectors(t, []string{text, ""}, kernels[0], kernels[i], vecs[0], vecs[i])
		}
		ctx := context.Background()
		d, err := u.Embed(ctx, []string{text})
		if err != nil {
			t.Fatal(err)
		}
		q, err := u.EmbedQueries(ctx, []string{text, ""})
		if err != nil {
			t.Fatal(err)
		}
		if c := cosine32(q[0], d[0]); c < minUSECosine {
			t.Fatalf("%q: cosine of EmbedQueries's vector to Embed's %.6f, want ≥ %v", text, c, minUSECosine)
		}
		e, err := u.Embed(ctx, []string{""})
		if err != nil {
			t.Fatal(err)
		}
		if c := cosine32(q[1], e[0]); c < minUSECosine {
			t.Fatalf("empty text beside %q: cosine %.6f, want ≥ %v", text, c, minUSECosine)
		}
	})
}

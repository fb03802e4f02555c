package encoder_test

import (
	"context"
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

// FuzzUSEQueries checks that EmbedQueries (the int16 path where AVX2
// runs) gives Embed's vector, to a cosine of at least minUSECosine, for
// any text: seeded with the fixture's.
func FuzzUSEQueries(f *testing.F) {
	for _, r := range loadUSEReference(f).Texts {
		f.Add(r.Text)
	}
	u := mustUSE(f)
	f.Fuzz(func(t *testing.T, text string) {
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

//go:build datasets

package retrieval

// The measurement behind docs/encoder-measurements.md: how the Universal
// Sentence Encoder (package encoder) fuses with today's signals on the
// public datasets. Run it with
//
//	go test -tags datasets -run EncoderFusion ./retrieval/ -v -timeout 60m
//
// USE vectors are cached in $TOOLSIFT_USE_CACHE (default
// $TMPDIR/toolsift-use-cache), keyed by text, since embedding ~9,000 tool
// documents takes minutes. Every configuration ranks with the retriever's
// own parts and fuse; only the lists given to fuse change.

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolsift/toolsift/encoder"
	"github.com/toolsift/toolsift/internal/dataset"
	"github.com/toolsift/toolsift/toolindex"
)

// useCache embeds texts with USE, through a file cache of one vector per
// text.
type useCache struct {
	u   *encoder.USE
	dir string
}

func (c *useCache) embed(t *testing.T, texts []string) [][]float32 {
	t.Helper()
	out := make([][]float32, len(texts))
	var missing []int
	for i, s := range texts {
		if v, ok := c.load(s); ok {
			out[i] = v
		} else {
			missing = append(missing, i)
		}
	}
	for start := 0; start < len(missing); start += 256 {
		idx := missing[start:min(start+256, len(missing))]
		batch := make([]string, len(idx))
		for j, i := range idx {
			batch[j] = texts[i]
		}
		vecs, err := c.u.Embed(context.Background(), batch)
		if err != nil {
			t.Fatal(err)
		}
		for j, i := range idx {
			out[i] = vecs[j]
			c.store(texts[i], vecs[j])
		}
	}
	return out
}

func (c *useCache) path(s string) string {
	h := sha256.Sum256([]byte(s))
	k := hex.EncodeToString(h[:])
	return filepath.Join(c.dir, k[:2], k)
}

func (c *useCache) load(s string) ([]float32, bool) {
	b, err := os.ReadFile(c.path(s))
	if err != nil || len(b) != 4*512 {
		return nil, false
	}
	v := make([]float32, 512)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, true
}

func (c *useCache) store(s string, v []float32) {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	p := c.path(s)
	_ = os.MkdirAll(filepath.Dir(p), 0o755)
	_ = os.WriteFile(p, b, 0o644)
}

// fusionConfig weighs the signals of one ranking: lexical (BM25F), the
// hashed n-gram vectors, and USE on the whole text (useWhole) and on its
// sentences (useSent).
type fusionConfig struct {
	label                        string
	lex, hash, useWhole, useSent float64
	// concat > 0 replaces the hashed vectors by one vector signal whose
	// score is cos(hash) + concat·cos(USE), what a ConcatEmbedder of the
	// two gives.
	concat float64
}

func TestEncoderFusion(t *testing.T) {
	cacheDir := os.Getenv("TOOLSIFT_USE_CACHE")
	if cacheDir == "" {
		cacheDir = filepath.Join(os.TempDir(), "toolsift-use-cache")
	}
	u, err := encoder.NewUSE(nil)
	if err != nil {
		t.Fatal(err)
	}
	cache := &useCache{u: u, dir: cacheDir}
	configs := []fusionConfig{
		{"lex+hash (today)", 1, 1, 0, 0, 0},
		{"lex", 1, 0, 0, 0, 0},
		{"hash", 0, 1, 0, 0, 0},
		{"use", 0, 0, 1, 1, 0},
		{"use whole only", 0, 0, 1, 0, 0},
		{"lex+use", 1, 0, 1, 1, 0},
		{"lex+use whole", 1, 0, 1, 0, 0},
		{"lex+use ×0.5", 1, 0, 0.5, 0.5, 0},
		{"lex+hash+use ×0.25", 1, 1, 0.25, 0.25, 0},
		{"lex+hash+use ×0.5", 1, 1, 0.5, 0.5, 0},
		{"lex+hash+use ×1", 1, 1, 1, 1, 0},
		{"lex+hash+use whole ×0.5", 1, 1, 0.5, 0, 0},
		{"lex+hash+use whole ×1", 1, 1, 1, 0, 0},
		{"lex+hash+use sent ×0.5", 1, 1, 0, 0.5, 0},
		{"lex+hash+use w1 s0.5", 1, 1, 1, 0.5, 0},
		{"lex+hash ×0.5+use", 1, 0.5, 1, 1, 0},
		{"lex+hash+use sent ×0.25", 1, 1, 0, 0.25, 0},
		{"lex+hash+use sent ×1", 1, 1, 0, 1, 0},
		{"lex+hash+use w0.15 s0.5", 1, 1, 0.15, 0.5, 0},
		{"lex+hash+use w0.25 s0.5", 1, 1, 0.25, 0.5, 0},
		{"lex+hash+use ×0.15", 1, 1, 0.15, 0.15, 0},
		{"lex+concat(hash,use ×0.5)", 1, 0, 0, 0, 0.5},
		{"lex+concat(hash,use ×1)", 1, 0, 0, 0, 1},
		{"lex+concat(hash,use ×0.3)", 1, 0, 0, 0, 0.3},
	}
	if m := os.Getenv("FUSION"); m != "" {
		var keep []fusionConfig
		for _, c := range configs {
			if slices.Contains(strings.Split(m, ";"), c.label) {
				keep = append(keep, c)
			}
		}
		configs = keep
	}
	sets := []string{"bfcl", "sealtools", "stabletoolbench", "restbench", "azuremcp"}
	if s := os.Getenv("SETS"); s != "" {
		sets = strings.Split(s, ",")
	}
	var report strings.Builder
	fmt.Fprintf(&report, "\n%-16s %-26s %6s %6s %6s\n", "dataset", "signals", "R@1", "R@5", "R@10")
	for _, name := range sets {
		dir := filepath.Join("../../shared/datasets", name)
		tools, err := dataset.LoadTools(filepath.Join(dir, "tools.jsonl"))
		if err != nil {
			t.Skipf("dataset %s: %v", name, err)
		}
		queries, err := dataset.LoadQueries(filepath.Join(dir, "queries.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		local, err := toolindex.NewLocalEmbedder(nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		ix, err := toolindex.New(local, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ix.Upsert(ctx, tools...); err != nil {
			t.Fatal(err)
		}
		docs := make([]string, len(tools))
		for i, tl := range tools {
			docs[i] = toolindex.Document(tl)
		}
		toolVecs := cache.embed(t, docs)
		toolHash, err := local.Embed(ctx, docs)
		if err != nil {
			t.Fatal(err)
		}
		// Every part of every query, embedded at once.
		qparts := make([][]part, len(queries))
		var qtexts []string
		for i, q := range queries {
			qparts[i] = parts(Query{Task: q.Query})
			for _, p := range qparts[i] {
				qtexts = append(qtexts, p.text)
			}
		}
		qvecs := cache.embed(t, qtexts)
		t.Logf("%s: %d tools, %d queries, %d query parts embedded", name, len(tools), len(queries), len(qtexts))

		const depth = 50
		cos := func(a, b []float32) float64 {
			var s float32
			for j := range a {
				s += a[j] * b[j]
			}
			return float64(s)
		}
		// search ranks all tools by score(i), best first.
		search := func(score func(i int) float64) []toolindex.Hit {
			hits := make([]toolindex.Hit, len(tools))
			for i := range tools {
				hits[i] = toolindex.Hit{Tool: tools[i], Score: score(i)}
			}
			slices.SortFunc(hits, func(a, b toolindex.Hit) int {
				if a.Score != b.Score {
					if a.Score > b.Score {
						return -1
					}
					return 1
				}
				return strings.Compare(a.Tool.Name, b.Tool.Name)
			})
			return hits[:min(depth, len(hits))]
		}
		// Lists per query and signal, computed once.
		useSearch := func(q []float32) []toolindex.Hit {
			return search(func(i int) float64 { return cos(toolVecs[i], q) })
		}
		type qlists struct{ lex, hash, use []list }
		type qvec struct{ hash, use []float32 }
		qv := make([][]qvec, len(queries))
		all := make([]qlists, len(queries))
		vi := 0
		for i := range queries {
			ps := qparts[i]
			texts := make([]string, len(ps))
			for j, p := range ps {
				texts[j] = p.text
			}
			hv, err := local.Embed(ctx, texts)
			if err != nil {
				t.Fatal(err)
			}
			for j, p := range ps {
				lh, err := ix.SearchVector(ctx, hv[j], depth, nil)
				if err != nil {
					t.Fatal(err)
				}
				all[i].hash = append(all[i].hash, list{lh, p.weight, p.group})
				all[i].lex = append(all[i].lex, list{ix.SearchLexical(p.text, depth, nil), p.weight, p.group})
				all[i].use = append(all[i].use, list{useSearch(qvecs[vi]), p.weight, p.group})
				qv[i] = append(qv[i], qvec{hv[j], qvecs[vi]})
				vi++
			}
		}
		for _, c := range configs {
			var r1, r5, r10 float64
			for i, q := range queries {
				var lists []list
				add := func(ls []list, w float64, signal int, sentences *bool) {
					if w == 0 {
						return
					}
					for _, l := range ls {
						// The first part of a group is a whole text; a
						// text's sentences share the group after it.
						whole := l.group%2 == 0
						if sentences != nil && whole == *sentences {
							continue
						}
						lists = append(lists, list{l.hits, l.weight * w, 100*signal + l.group})
					}
				}
				no, yes := false, true
				add(all[i].lex, c.lex, 0, nil)
				add(all[i].hash, c.hash, 1, nil)
				add(all[i].use, c.useWhole, 2, &no)
				add(all[i].use, c.useSent, 3, &yes)
				if c.concat > 0 {
					var cl []list
					for j, l := range all[i].hash {
						h, u := qv[i][j].hash, qv[i][j].use
						cl = append(cl, list{search(func(k int) float64 {
							return (cos(toolHash[k], h) + c.concat*cos(toolVecs[k], u)) / (1 + c.concat)
						}), l.weight, l.group})
					}
					add(cl, 1, 5, nil)
				}
				ms := fuse(lists, WeightedSum, 10)
				ranked := make([]string, len(ms))
				for j, m := range ms {
					ranked[j] = m.Tool.Name
				}
				g := q.Groups()
				r1 += Recall(ranked, g, 1)
				r5 += Recall(ranked, g, 5)
				r10 += Recall(ranked, g, 10)
			}
			n := float64(len(queries))
			fmt.Fprintf(&report, "%-16s %-26s %6.3f %6.3f %6.3f\n", name, c.label, r1/n, r5/n, r10/n)
		}
		t.Log(report.String())
	}
}

//go:build datasets

package retrieval

// The measurement behind docs/measurements.md: how the Universal
// Sentence Encoder (package encoder) fuses with BM25F and the hashed
// n-gram vectors. Run it with
//
//	go test -tags datasets -run EncoderFusion ./retrieval/ -v -timeout 120m
//
// USE vectors are cached in $TOOLSIFT_USE_CACHE (default
// $TMPDIR/toolsift-use-cache), keyed by text, since embedding ~10,000 tool
// documents takes minutes. FUSION_SETS picks datasets
// (name=tools.jsonl:queries.jsonl,... or names of ../shared/datasets
// folders; default the five public sets, the paraphrase sets and the
// catalog's hand-written queries), FUSION_SPECS configurations (see
// fusionConfigs) and FUSION_DEPTH the candidates per list (80, the
// retriever's at K = 20).

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
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/toolsift/toolsift/encoder"
	"github.com/toolsift/toolsift/internal/dataset"
	"github.com/toolsift/toolsift/internal/evalmetric"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/toolindex"
	"github.com/toolsift/toolsift/upstream"
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
	if len(missing) > 0 {
		t.Logf("embedding %d texts with USE", len(missing))
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
	h := sha256.Sum256([]byte(c.u.ID() + "\x00" + s))
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

// Document texts USE can be given for a tool.
var useDocs = map[string]func(tool.Tool) string{
	// The whole search document (name, description, parameters, server).
	"doc": toolindex.Document,
	// Name and description only.
	"nd": func(t tool.Tool) string {
		f := toolindex.DocumentFields(t)
		return strings.TrimSpace(f.Name + "\n\n" + f.Description)
	},
	// Name and the first 256 bytes of the description, cut at a space.
	"nd256": func(t tool.Tool) string {
		f := toolindex.DocumentFields(t)
		d := f.Description
		if len(d) > 256 {
			d = d[:256]
			if i := strings.LastIndexByte(d, ' '); i > 128 {
				d = d[:i]
			}
		}
		return strings.TrimSpace(f.Name + "\n\n" + d)
	},
}

// fusionConfig weighs the signals of one ranking.
type fusionConfig struct {
	label string
	// weights by signal: "lex", "hash", "use:<doc>"; a signal absent or 0
	// is not used.
	w map[string]float64
	// wholeOnly searches USE with the whole text only, not its sentences.
	wholeOnly bool
	// norm is how a list's scores are made comparable: "lib" (what fuse
	// does: (s − last)/σ), "best" (divided by the list's best, fuse's
	// normalisation before the semantic signal), "z" (= lib, computed
	// here), "zp" (z with a short BM25F list padded with zeros to the
	// depth: the tools it leaves out score 0) or "minmax" (0 at the list's
	// last, 1 at its best).
	norm string
}

type dsSpec struct{ name, tools, queries string }

func fusionSets() []dsSpec {
	env := os.Getenv("FUSION_SETS")
	if env == "" {
		env = "bfcl,sealtools,stabletoolbench,restbench,azuremcp," +
			"para-mcp=../../shared/mcp/catalog.jsonl:../benchmarks/testdata/paraphrase/mcp/queries.jsonl," +
			"para-bfcl=../../shared/datasets/bfcl/tools.jsonl:../benchmarks/testdata/paraphrase/bfcl/queries.jsonl," +
			"catalog32=../../shared/mcp/catalog.jsonl:../benchmarks/testdata/catalog_queries.jsonl"
	}
	var out []dsSpec
	for _, s := range strings.Split(env, ",") {
		name, files, ok := strings.Cut(s, "=")
		if !ok {
			dir := filepath.Join("../../shared/datasets", s)
			out = append(out, dsSpec{s, filepath.Join(dir, "tools.jsonl"), filepath.Join(dir, "queries.jsonl")})
			continue
		}
		tools, queries, _ := strings.Cut(files, ":")
		out = append(out, dsSpec{name, tools, queries})
	}
	return out
}

// defaultFusionSpecs are the configurations of docs/measurements.md:
// the fusion before the semantic signal, each signal alone, today's
// default (lib), and its neighbours.
const defaultFusionSpecs = "lex=1,hash=1,norm=best|lex=1,norm=lib|hash=1,norm=lib|use:nd256=1,norm=lib|use:doc=1,norm=lib|" +
	"lex=1,hash=0.5,use:nd256=0.75,norm=lib|lex=1,hash=0.5,norm=lib|lex=1,hash=1,norm=lib|" +
	"lex=1,hash=0.5,use:nd256=0.75,norm=best|lex=1,hash=0.5,use:nd256=0.75,norm=minmax|lex=1,hash=0.5,use:nd256=0.75,norm=z|" +
	"lex=1,hash=0.5,use:nd256=0.6,norm=lib|lex=1,hash=0.5,use:nd256=0.9,norm=lib|lex=1,hash=0.75,use:nd256=0.75,norm=lib|" +
	"lex=1,hash=0.5,use:doc=0.75,norm=lib|lex=1,hash=0.5,use:nd=0.75,norm=lib|lex=1,hash=0.5,use:nd256=0.75,norm=lib,whole"

// fusionConfigs parses FUSION_SPECS (default defaultFusionSpecs):
// configurations separated by "|", each "sig=w,sig=w[,norm=N][,whole]"
// with signals lex, hash, use:doc, use:nd, use:nd256 and norm one of
// normFuse's.
func fusionConfigs() []fusionConfig {
	specs := os.Getenv("FUSION_SPECS")
	if specs == "" {
		specs = defaultFusionSpecs
	}
	var cs []fusionConfig
	for _, spec := range strings.Split(specs, "|") {
		c := fusionConfig{label: spec, w: map[string]float64{}, norm: "lib"}
		for _, f := range strings.Split(spec, ",") {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "norm":
				c.norm = v
			case "whole":
				c.wholeOnly = true
			default:
				w, err := strconv.ParseFloat(v, 64)
				if err != nil {
					panic(spec)
				}
				c.w[k] = w
			}
		}
		cs = append(cs, c)
	}
	return cs
}

// fusionDepth is how many candidates a list holds (FUSION_DEPTH, default
// 80, the retriever's depth at K = 20).
var fusionDepth = func() int {
	if d, err := strconv.Atoi(os.Getenv("FUSION_DEPTH")); err == nil {
		return d
	}
	return 80
}()

// normFuse is fuse with a choice of normalisation.
func normFuse(lists []list, norm string, k int) []string {
	if norm == "lib" {
		ms := fuse(lists, weightedSum, k)
		out := make([]string, len(ms))
		for i, m := range ms {
			out[i] = m.Tool.Name
		}
		return out
	}
	type key struct {
		name  string
		group int
	}
	contrib := map[key]float64{}
	for _, l := range lists {
		if len(l.hits) == 0 {
			continue
		}
		hi, lo := l.hits[0].Score, l.hits[len(l.hits)-1].Score
		n := float64(len(l.hits))
		pad := 0.0
		if norm == "zp" && len(l.hits) < fusionDepth && l.group < 100 { // lexical: signal 0
			// A short list holds every tool that scores: the rest score 0.
			lo, pad = 0, float64(fusionDepth-len(l.hits))
		}
		var mean, sd float64
		for _, h := range l.hits {
			mean += h.Score
		}
		mean /= n + pad
		for _, h := range l.hits {
			sd += (h.Score - mean) * (h.Score - mean)
		}
		sd += pad * mean * mean
		sd = math.Sqrt(sd / (n + pad))
		for _, h := range l.hits {
			s := 1.0
			switch norm {
			case "best":
				if hi > 0 {
					s = max(h.Score, 0) / hi
				}
			case "z", "zp":
				if sd > 0 {
					s = (h.Score - lo) / sd
				}
			default:
				if hi > lo {
					s = (h.Score - lo) / (hi - lo)
				}
			}
			kk := key{h.Tool.Name, l.group}
			contrib[kk] = max(contrib[kk], l.weight*s)
		}
	}
	score := map[string]float64{}
	for kk, s := range contrib {
		score[kk.name] += s
	}
	names := make([]string, 0, len(score))
	for n := range score {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		if score[a] != score[b] {
			if score[a] > score[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	return names[:min(k, len(names))]
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
	configs := fusionConfigs()
	var report strings.Builder
	fmt.Fprintf(&report, "\n%-16s %-34s %6s %6s %6s\n", "dataset", "signals", "R@1", "R@5", "R@10")
	for _, ds := range fusionSets() {
		tools, _, err := dataset.LoadToolsQualified(ds.tools, upstream.QualifiedName)
		if err != nil {
			t.Fatalf("dataset %s: %v", ds.name, err)
		}
		queries, err := dataset.LoadQueries(ds.queries)
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
		docVecs := map[string][][]float32{}
		for _, d := range []string{"doc", "nd", "nd256"} {
			docs := make([]string, len(tools))
			for i, tl := range tools {
				docs[i] = useDocs[d](tl)
			}
			docVecs[d] = cache.embed(t, docs)
		}
		qparts := make([][]part, len(queries))
		var qtexts []string
		for i, q := range queries {
			qparts[i] = parts(Query{Task: q.Query})
			for _, p := range qparts[i] {
				qtexts = append(qtexts, p.text)
			}
		}
		qvecs := cache.embed(t, qtexts)
		t.Logf("%s: %d tools, %d queries, %d query parts", ds.name, len(tools), len(queries), len(qtexts))

		depth := fusionDepth
		search := func(vecs [][]float32, q []float32) []toolindex.Hit {
			hits := make([]toolindex.Hit, len(tools))
			for i := range tools {
				var s float32
				for j, x := range vecs[i] {
					s += x * q[j]
				}
				hits[i] = toolindex.Hit{Tool: tools[i], Score: float64(s)}
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
			// A copy: the whole array must not stay alive per list.
			return slices.Clone(hits[:min(depth, len(hits))])
		}
		// Lists per query, part and signal, computed once.
		type plists struct {
			p     part
			bySig map[string][]toolindex.Hit
		}
		all := make([][]plists, len(queries))
		var mu sync.Mutex
		var wg sync.WaitGroup
		sem := make(chan struct{}, 2)
		vi := 0
		for i := range queries {
			base := vi
			vi += len(qparts[i])
			wg.Add(1)
			sem <- struct{}{}
			go func(i, base int) {
				defer wg.Done()
				defer func() { <-sem }()
				var out []plists
				for j, p := range qparts[i] {
					hv, err := local.Embed(ctx, []string{p.text})
					if err != nil {
						panic(err)
					}
					lh, err := ix.SearchVector(ctx, hv[0], depth, nil)
					if err != nil {
						panic(err)
					}
					m := map[string][]toolindex.Hit{"lex": ix.SearchLexical(p.text, depth, nil), "hash": lh}
					for d, vecs := range docVecs {
						m["use:"+d] = search(vecs, qvecs[base+j])
					}
					out = append(out, plists{p, m})
				}
				mu.Lock()
				all[i] = out
				mu.Unlock()
			}(i, base)
		}
		wg.Wait()
		for _, c := range configs {
			var r1, r5, r10 float64
			for i, q := range queries {
				var lists []list
				for sig, w := range c.w {
					if w == 0 {
						continue
					}
					sigID := map[string]int{"lex": 0, "hash": 1, "use:doc": 2, "use:nd": 3, "use:nd256": 4}[sig]
					for _, pl := range all[i] {
						whole := pl.p.group%2 == 0
						if strings.HasPrefix(sig, "use") && c.wholeOnly && !whole {
							continue
						}
						lists = append(lists, list{hits: pl.bySig[sig], weight: pl.p.weight * w, group: 100*sigID + pl.p.group})
					}
				}
				ranked := normFuse(lists, c.norm, 10)
				g := q.Groups()
				r1 += evalmetric.Recall(ranked, g, 1)
				r5 += evalmetric.Recall(ranked, g, 5)
				r10 += evalmetric.Recall(ranked, g, 10)
			}
			n := float64(len(queries))
			fmt.Fprintf(&report, "%-16s %-34s %6.3f %6.3f %6.3f\n", ds.name, c.label, r1/n, r5/n, r10/n)
		}
		t.Log(report.String())
	}
}

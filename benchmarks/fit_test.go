//go:build datasets

package benchmarks_test

// The fitting of Hybrid fusion's weights (retrieval.Weights) on public data
// only: a grid of round values, scored by mean recall@5 over every fourth
// query of sealtools and stabletoolbench (the "train" quarters, numbers
// 0, 4, 8, ...); the odd-numbered queries, the other public sets and the
// paraphrase sets are never seen by the fit and check it (TestRankIdeas's
// "fitted" variant). Run it with
//
//	TOOLSIFT_SHARED=../../shared go test -tags datasets -run FitWeights -v -timeout 60m ./benchmarks/
//
// BM25F's weight is fixed at 1: fusion is a weighted sum, so only the
// ratios count.

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/internal/dataset"
	"github.com/toolsift/toolsift/internal/evalmetric"
	"github.com/toolsift/toolsift/internal/textproc"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/toolindex"
)

// fitGrid are the weights the fit chooses among.
var fitGrid = struct{ vector, semantic []float64 }{
	vector:   []float64{0.25, 0.5, 1},
	semantic: []float64{0.25, 0.5, 0.75},
}

func TestFitWeights(t *testing.T) {
	shared := os.Getenv("TOOLSIFT_SHARED")
	if shared == "" {
		shared = filepath.Join("..", "..", "shared")
	}
	ctx := context.Background()
	type half struct {
		name string
		ix   *toolindex.Index // of the Toolset's Think step
		qs   []dataset.Query
	}
	var halves []half
	for _, n := range []string{"sealtools", "stabletoolbench"} {
		dir := filepath.Join(shared, "datasets", n)
		tools, err := dataset.LoadTools(filepath.Join(dir, "tools.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		qs, err := dataset.LoadQueries(filepath.Join(dir, "queries.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		var train []dataset.Query
		for i := 0; i < len(qs); i += 4 {
			train = append(train, qs[i])
		}
		st := storeIn(t, os.Getenv("TOOLSIFT_RANK_CACHE"))
		th := newStep(t, st)
		ts, err := toolsift.New(ctx, tools, &toolsift.Options{Thinker: th, Store: st})
		if err != nil {
			t.Fatal(err)
		}
		defer ts.Close()
		halves = append(halves, half{n, th.Index(), train})
	}
	best, bestW := -1.0, retrieval.Weights{}
	for _, v := range fitGrid.vector {
		for _, s := range fitGrid.semantic {
			w := retrieval.Weights{Lexical: 1, Vector: v, Semantic: s}
			var mean float64
			line := fmt.Sprintf("lexical 1 vector %-4v semantic %-4v", v, s)
			for _, h := range halves {
				r, err := retrieval.New(h.ix, &retrieval.Options{K: 5, Weights: w})
				if err != nil {
					t.Fatal(err)
				}
				var r5 float64
				for _, q := range h.qs {
					ms, err := r.Retrieve(ctx, retrieval.Query{Task: q.Query})
					if err != nil {
						t.Fatal(err)
					}
					ranked := make([]string, len(ms))
					for i, m := range ms {
						ranked[i] = m.Tool.Name
					}
					r5 += evalmetric.Recall(ranked, q.Groups(), 5)
				}
				r5 /= float64(len(h.qs))
				mean += r5 / float64(len(halves))
				line += fmt.Sprintf("  %s %.3f", h.name, r5)
			}
			t.Logf("%s  mean recall@5 %.4f", line, mean)
			if mean > best {
				best, bestW = mean, w
			}
		}
	}
	t.Logf("fitted: %+v (mean recall@5 %.4f on the train halves)", bestW, best)
}

// TestFitAssociations fits retrieval's word-association table
// (retrieval/assoc.tsv, internal/rankopt Features.Associate) on public data only:
// the requests of sealtools and stabletoolbench whose number is not a
// multiple of four (three quarters of each), each with its gold tools. The
// quarters numbered 0, 4, 8, ... of both sets, the other public sets and
// the paraphrase sets are never seen by the fit (TestRankIdeas's
// "-heldout" sets and "assoc" variants check it). Run it with
//
//	TOOLSIFT_SHARED=../../shared FIT_WRITE=1 go test -tags datasets -run FitAssociations -v ./benchmarks/
//
// A pair (request term q, tool word d) is kept when at least
// assocMinQueries requests with q have a gold tool with d, among at least
// assocMinTools different tools (never one tool's name), when d is at
// least assocMinLift times likelier in the gold of requests with q than in
// the gold of all requests, and when it is among q's assocPerTerm best.
// Its weight is the share of q's requests whose gold has d, rounded to
// 0.05.
func TestFitAssociations(t *testing.T) {
	const (
		assocMinTermQueries = 5
		assocMinQueries     = 4
		assocMinTools       = 4
		assocMinShare       = 0.2
		assocMinLift        = 4
		assocPerTerm        = 5
		assocDescRunes      = 200
	)
	shared := os.Getenv("TOOLSIFT_SHARED")
	if shared == "" {
		shared = filepath.Join("..", "..", "shared")
	}
	keep := func(w string) bool {
		if len(w) < 3 || textproc.IsStopword(w) {
			return false
		}
		for _, c := range w {
			if c < '0' || c > '9' {
				return true
			}
		}
		return false
	}
	nq := map[string]int{}                     // requests with the term
	nd := map[string]int{}                     // requests whose gold has the word
	nqd := map[[2]string]int{}                 // requests with q whose gold has d
	toolsOf := map[[2]string]map[string]bool{} // the gold tools that showed the pair
	surface := map[string]map[string]int{}     // a stem's written forms
	n := 0
	for _, set := range []string{"sealtools", "stabletoolbench"} {
		dir := filepath.Join(shared, "datasets", set)
		tools, err := dataset.LoadTools(filepath.Join(dir, "tools.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]tool.Tool{}
		for _, tl := range tools {
			byName[tl.Name] = tl
		}
		qs, err := dataset.LoadQueries(filepath.Join(dir, "queries.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		for i, q := range qs {
			if i%4 == 0 {
				continue // held out
			}
			n++
			qterms := map[string]bool{}
			for _, w := range textproc.Words(q.Query) {
				if keep(w) {
					qterms[textproc.Stem(w)] = true
				}
			}
			// Each gold word once per request, with the tools that have it.
			dtools := map[string]map[string]bool{}
			for _, name := range q.Gold {
				tl := byName[name]
				text := strings.Join([]string{tl.Name, tl.OriginalName, tl.Title, firstRunes(tl.Description, assocDescRunes)}, " ")
				for _, w := range textproc.Words(text) {
					if !keep(w) {
						continue
					}
					s := textproc.Stem(w)
					if surface[s] == nil {
						surface[s] = map[string]int{}
					}
					surface[s][w]++
					if dtools[s] == nil {
						dtools[s] = map[string]bool{}
					}
					dtools[s][set+"/"+name] = true
				}
			}
			for d := range dtools {
				nd[d]++
			}
			for qt := range qterms {
				nq[qt]++
				for d, ts := range dtools {
					if d == qt {
						continue
					}
					k := [2]string{qt, d}
					nqd[k]++
					if toolsOf[k] == nil {
						toolsOf[k] = map[string]bool{}
					}
					for tn := range ts {
						toolsOf[k][tn] = true
					}
				}
			}
		}
	}
	type pair struct {
		d     string
		share float64
	}
	table := map[string][]pair{}
	for k, c := range nqd {
		q, d := k[0], k[1]
		if nq[q] < assocMinTermQueries || c < assocMinQueries || len(toolsOf[k]) < assocMinTools {
			continue
		}
		share := float64(c) / float64(nq[q])
		lift := share / (float64(nd[d]) / float64(n))
		if share < assocMinShare || lift < assocMinLift {
			continue
		}
		table[q] = append(table[q], pair{d, share})
	}
	var b strings.Builder
	b.WriteString("# Fitted by benchmarks/fit_test.go TestFitAssociations on three quarters of sealtools and stabletoolbench; see retrieval/assoc.go.\n")
	pairs := 0
	for _, q := range slices.Sorted(maps.Keys(table)) {
		ps := table[q]
		slices.SortFunc(ps, func(a, b pair) int {
			if a.share != b.share {
				if a.share > b.share {
					return -1
				}
				return 1
			}
			return strings.Compare(a.d, b.d)
		})
		ps = ps[:min(assocPerTerm, len(ps))]
		b.WriteString(q)
		b.WriteString("\t")
		for i, p := range ps {
			// The written form most often seen, ties by spelling.
			forms := surface[p.d]
			word := ""
			for _, f := range slices.Sorted(maps.Keys(forms)) {
				if word == "" || forms[f] > forms[word] {
					word = f
				}
			}
			if i > 0 {
				b.WriteString(" ")
			}
			fmt.Fprintf(&b, "%s:%.2f", word, max(0.05, math.Round(p.share*20)/20))
		}
		b.WriteString("\n")
		pairs += len(ps)
	}
	t.Logf("%d requests, %d request terms, %d pairs, %d bytes", n, len(table), pairs, b.Len())
	if os.Getenv("FIT_WRITE") != "" {
		if err := os.WriteFile(filepath.Join("..", "retrieval", "assoc.tsv"), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log("wrote ../retrieval/assoc.tsv")
	}
}

func firstRunes(s string, n int) string {
	r := []rune(s)
	return string(r[:min(n, len(r))])
}

package retrieval

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/toolindex"
)

// Two tools with the same contributions get the same score, so that the
// name breaks their tie: 0.1+0.2+0.3 depends on the order of the sum, and
// a sum in a map's order ranked them either way.
func TestFuseTiesByName(t *testing.T) {
	one := func(name string) []toolindex.Hit { return []toolindex.Hit{{Tool: tool.Tool{Name: name}, Score: 1}} }
	var lists []list
	for g, w := range []float64{0.1, 0.2, 0.3} {
		lists = append(lists, list{hits: one("b"), weight: w, group: g}, list{hits: one("a"), weight: w, group: g})
	}
	for i := range 200 {
		ms := fuse(lists, rrf, 2)
		if len(ms) != 2 || ms[0].Tool.Name != "a" || ms[0].Score != ms[1].Score {
			t.Fatalf("run %d: fuse = %v, want a then b with the same score", i, ms)
		}
	}
}

// fuse gives what the rule of its doc gives, computed plainly with maps:
// the same tools, in the same order, with the same scores to the bit.
func TestFuseMatchesRule(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for c := range 300 {
		var lists []list
		for range 1 + rng.IntN(8) {
			n := rng.IntN(60)
			hits := make([]toolindex.Hit, n)
			s := rng.Float64() * 3
			for i := range hits {
				hits[i] = toolindex.Hit{Tool: tool.Tool{Name: fmt.Sprintf("t%d", rng.IntN(150)), Description: "d"}, Score: s}
				if rng.IntN(4) > 0 {
					s -= rng.Float64() * 0.1
				}
			}
			lists = append(lists, list{hits: hits, weight: float64(rng.IntN(4)) / 2, group: rng.IntN(7)})
		}
		for _, f := range []fusion{weightedSum, rrf} {
			k := 1 + rng.IntN(80)
			got, want := fuse(lists, f, k), fuseRule(lists, f, k)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("case %d, fusion %v, k %d (-want +got):\n%s", c, f, k, diff)
			}
		}
	}
}

// fuseRule is fuse's doc written plainly.
func fuseRule(lists []list, f fusion, k int) []Match {
	var groups []int
	for _, l := range lists {
		if !slices.Contains(groups, l.group) {
			groups = append(groups, l.group)
		}
	}
	type key struct {
		name  string
		group int
	}
	contrib := map[key]float64{}
	tools := map[string]tool.Tool{}
	top, weight := map[int]float64{}, map[int]float64{}
	maxTop := 0.0
	for _, l := range lists {
		weight[l.group] = max(weight[l.group], l.weight)
		if len(l.hits) == 0 {
			continue
		}
		lo := l.hits[len(l.hits)-1].Score
		var mean, v float64
		for _, h := range l.hits {
			mean += h.Score
		}
		mean /= float64(len(l.hits))
		for _, h := range l.hits {
			v += (h.Score - mean) * (h.Score - mean)
		}
		sd := math.Sqrt(v / float64(len(l.hits)))
		for i, h := range l.hits {
			s := l.weight * float64(rrfK+1) / float64(rrfK+i+1)
			if f == weightedSum {
				norm := 1.0
				if sd > 0 {
					norm = max(h.Score-lo, 0) / sd
				}
				s = l.weight * norm
			}
			if i == 0 {
				top[l.group] = max(top[l.group], s)
				if l.weight > 0 {
					maxTop = max(maxTop, s/l.weight)
				}
			}
			contrib[key{h.Tool.Name, l.group}] = max(contrib[key{h.Tool.Name, l.group}], s)
			tools[h.Tool.Name] = h.Tool
		}
	}
	var total float64
	for _, g := range groups {
		if s, ok := top[g]; ok {
			total += s
		} else {
			total += weight[g] * maxTop
		}
	}
	out := []Match{}
	for name, tl := range tools {
		var s float64
		for _, g := range groups {
			s += contrib[key{name, g}]
		}
		if total > 0 {
			s = min(s/total, 1)
		}
		out = append(out, Match{Tool: tl, Score: s})
	}
	sortMatches(out)
	return out[:min(k, len(out))]
}

// BenchmarkFuse fuses what a search fuses: three signals' lists of 50
// hits (the default depth) over 2,574 tools, keeping 6.
func BenchmarkFuse(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	var lists []list
	for g := range 3 {
		hits := make([]toolindex.Hit, 50)
		s := 1.0
		for i := range hits {
			hits[i] = toolindex.Hit{Tool: tool.Tool{Name: fmt.Sprintf("server__tool_%d", rng.IntN(2574))}, Score: s}
			s -= rng.Float64() * 0.02
		}
		lists = append(lists, list{hits: hits, weight: 1, group: g})
	}
	b.ReportAllocs()
	for b.Loop() {
		fuse(lists, weightedSum, 6)
	}
}

// Package evalmetric scores a ranking against a query's gold, as
// toolbench eval, toolbench replay and the benchmarks report it: recall@k,
// hit@k, complete@k, MRR and nDCG@k.
package evalmetric

import "math"

// The metrics below score one ranked list of tool names against the gold
// of one query, given as groups: each group is one needed tool, and any
// member of a group satisfies it (a query without alternatives has one
// single-name group per gold tool). Average them over queries. A name
// satisfies at most the groups it is in; each group counts once however
// many of its members are ranked. With no groups every metric is 0.

// Recall returns the fraction of groups satisfied by the top k of ranked:
// recall@k.
func Recall(ranked []string, groups [][]string, k int) float64 {
	if len(groups) == 0 {
		return 0
	}
	return float64(satisfied(ranked, groups, k)) / float64(len(groups))
}

// Hit returns 1 when the top k of ranked satisfy at least one group, else
// 0: hit@k.
func Hit(ranked []string, groups [][]string, k int) float64 {
	if satisfied(ranked, groups, k) > 0 {
		return 1
	}
	return 0
}

// Complete returns 1 when the top k of ranked satisfy every group, else 0:
// complete@k, whether an agent shown k tools has everything it needs.
func Complete(ranked []string, groups [][]string, k int) float64 {
	if len(groups) > 0 && satisfied(ranked, groups, k) == len(groups) {
		return 1
	}
	return 0
}

// MRR returns the reciprocal rank of the first name in ranked that belongs
// to any group (1 for the first position), or 0 when none does.
func MRR(ranked []string, groups [][]string) float64 {
	for i, name := range ranked {
		if len(groupsOf(name, groups)) > 0 {
			return 1 / float64(i+1)
		}
	}
	return 0
}

// NDCG returns nDCG@k with binary gains per group: a ranked name gains 1
// when it satisfies a group that no higher-ranked name satisfied, discounted
// by log2(position+1); the ideal ranking puts one member of every group
// first.
func NDCG(ranked []string, groups [][]string, k int) float64 {
	if len(groups) == 0 || k <= 0 {
		return 0
	}
	done := make([]bool, len(groups))
	var dcg float64
	for i, name := range ranked[:min(k, len(ranked))] {
		gain := false
		for _, g := range groupsOf(name, groups) {
			if !done[g] {
				done[g] = true
				gain = true
			}
		}
		if gain {
			dcg += 1 / math.Log2(float64(i+2))
		}
	}
	var ideal float64
	for i := range min(k, len(groups)) {
		ideal += 1 / math.Log2(float64(i+2))
	}
	return dcg / ideal
}

// satisfied counts the groups with a member in the top k of ranked.
func satisfied(ranked []string, groups [][]string, k int) int {
	if k <= 0 {
		return 0
	}
	done := make([]bool, len(groups))
	n := 0
	for _, name := range ranked[:min(k, len(ranked))] {
		for _, g := range groupsOf(name, groups) {
			if !done[g] {
				done[g] = true
				n++
			}
		}
	}
	return n
}

// groupsOf returns the indexes of the groups that contain name.
func groupsOf(name string, groups [][]string) []int {
	var out []int
	for i, g := range groups {
		for _, m := range g {
			if m == name {
				out = append(out, i)
				break
			}
		}
	}
	return out
}

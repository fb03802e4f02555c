//go:build datasets

package main

// The usage rules' alternatives, replayed on the public sets and the
// everyday sets (docs/measurements.md, "A search that learns from the
// calls it routes", tried and dropped). Run it with
//
//	go test -tags datasets -run ReplayVariants -v -timeout 120m ./cmd/toolbench/
//
// The datasets are read from $TOOLSIFT_SHARED (default ../../../shared).
// REPLAY_SETS picks sets (comma-separated; default all), REPLAY_VARIANTS
// variants (default all), REPLAY_HISTORY the history (default 0.5),
// REPLAY_IDENTITIES the identities (default 1, as toolbench replay's),
// REPLAY_NOISE the noise (default 0), REPLAY_SEEDS the seeds (default 1).

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/internal/usageopt"
	learn "github.com/toolsift/toolsift/usage"
)

type replayVariant struct {
	name string
	set  func(*usageopt.Tuning)
}

var replayVariants = []replayVariant{
	{"default", func(*usageopt.Tuning) {}},
	{"noactions", func(t *usageopt.Tuning) { t.Actions = false }},
	// The terms and the vectors, other weights.
	{"alpha0.3", func(t *usageopt.Tuning) { t.Alpha, t.PriorMean, t.PriorSpread, t.Floor = 0.3, 0.11, 0.06, 0.25 }},
	{"alpha0.7", func(t *usageopt.Tuning) { t.Alpha, t.PriorMean, t.PriorSpread, t.Floor = 0.7, 0.22, 0.09, 0.4 }},
	{"vectors-only", func(t *usageopt.Tuning) {
		t.Alpha, t.PriorMean, t.PriorSpread, t.Floor, t.CosFloor = 1, 0.31, 0.12, 0.5, 0
	}},
	// No vectors-alone path (the mixed similarity only).
	{"nocos", func(t *usageopt.Tuning) { t.CosFloor = 0 }},
	{"cos0.55", func(t *usageopt.Tuning) { t.CosFloor = 0.55 }},
	// The vectors-alone path for every pair of requests (the rule before
	// 2026-12-03), or while one of them has fewer than 6 or 12 terms
	// (default 8).
	{"cosmax0", func(t *usageopt.Tuning) { t.CosMaxTerms = 0 }},
	{"cosmax6", func(t *usageopt.Tuning) { t.CosMaxTerms = 6 }},
	{"cosmax12", func(t *usageopt.Tuning) { t.CosMaxTerms = 12 }},
	// The floor and its softness.
	{"floor0.35", func(t *usageopt.Tuning) { t.Floor = 0.35 }},
	{"floor0.4", func(t *usageopt.Tuning) { t.Floor = 0.4 }},
	{"floor0.45", func(t *usageopt.Tuning) { t.Floor = 0.45 }},
	{"floor0.55", func(t *usageopt.Tuning) { t.Floor = 0.55 }},
	{"soft2", func(t *usageopt.Tuning) { t.Soft = 2 }},
	{"hard-floor", func(t *usageopt.Tuning) { t.Soft = 0 }},
	{"soft1", func(t *usageopt.Tuning) { t.Soft = 1 }},
	// Saturation.
	{"tau0.5", func(t *usageopt.Tuning) { t.Tau = 0.5 }},
	{"tau2", func(t *usageopt.Tuning) { t.Tau = 2 }},
	// The gate.
	{"gate1.5", func(t *usageopt.Tuning) { t.Gate = 1.5 }},
	{"gate3", func(t *usageopt.Tuning) { t.Gate = 3 }},
	// No prior: a small scope's own mean and spread.
	{"noprior", func(t *usageopt.Tuning) { t.Prior = 0 }},
}

func TestReplayVariants(t *testing.T) {
	shared := os.Getenv("TOOLSIFT_SHARED")
	if shared == "" {
		shared = filepath.Join("..", "..", "..", "shared")
	}
	ev := filepath.Join("..", "..", "benchmarks", "testdata", "everyday")
	catalog := filepath.Join(shared, "mcp", "catalog.jsonl")
	ref := filepath.Join(ev, "reference", "tools.jsonl")
	sets := [][3]string{
		{"restbench", "", ""}, {"azuremcp", "", ""}, {"stabletoolbench", "", ""}, {"sealtools", "", ""}, {"bfcl", "", ""},
		{"repeat-ref", ref, filepath.Join(ev, "repeat", "reference", "queries.jsonl")},
		{"repeat-cat", catalog, filepath.Join(ev, "repeat", "catalog", "queries.jsonl")},
		{"repeat-heldout-ref", ref, filepath.Join(ev, "repeat", "heldout", "reference", "queries.jsonl")},
		{"everyday-ref", ref, filepath.Join(ev, "reference", "queries.jsonl")},
		{"everyday-cat", catalog, filepath.Join(ev, "catalog", "queries.jsonl")},
		{"heldout-ref", ref, filepath.Join(ev, "heldout", "reference", "queries.jsonl")},
		{"heldout-cat", catalog, filepath.Join(ev, "heldout", "catalog", "queries.jsonl")},
	}
	only := func(env, name string) bool {
		v := os.Getenv(env)
		return v == "" || slices.Contains(strings.Split(v, ","), name)
	}
	num := func(env string, def float64) float64 {
		if v := os.Getenv(env); v != "" {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s=%q: %v", env, v, err)
			}
			return x
		}
		return def
	}
	history, identities, seeds, noise := num("REPLAY_HISTORY", 0.5), int(num("REPLAY_IDENTITIES", 1)), int(num("REPLAY_SEEDS", 1)), num("REPLAY_NOISE", 0)
	e := &env{stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }}
	for _, s := range sets {
		if !only("REPLAY_SETS", s[0]) {
			continue
		}
		tools, queries := s[1], s[2]
		if tools == "" {
			tools, queries = filepath.Join(shared, "datasets", s[0], "tools.jsonl"), filepath.Join(shared, "datasets", s[0], "queries.jsonl")
		}
		for _, v := range replayVariants {
			if !only("REPLAY_VARIANTS", v.name) {
				continue
			}
			tune := usageopt.Default()
			v.set(&tune)
			var mo learn.Options
			usageopt.Set(&mo, tune)
			var r5w, r5, h3w, h3 float64
			var per []string
			for seed := 1; seed <= seeds; seed++ {
				o := replayOptions{toolsPath: tools, queriesPath: queries, history: history, noise: noise, seed: uint64(seed), identities: identities,
					quiet: true, memory: &mo, cache: func(context.Context, *toolsift.Options) error { return nil }}
				rep, err := replay(context.Background(), e, o)
				if err != nil {
					t.Fatal(err)
				}
				per = append(per, strconv.FormatFloat(rep.Recall5.With-rep.Recall5.Without, 'f', 3, 64))
				r5w += rep.Recall5.Without
				r5 += rep.Recall5.With
				h3w += rep.Hit3.Without
				h3 += rep.Hit3.With
			}
			n := float64(seeds)
			t.Logf("%-18s %-12s recall@5 %.3f -> %.3f (%+.3f)  hit@3 %.3f -> %.3f (%+.3f)  seeds %s", s[0], v.name, r5w/n, r5/n, (r5-r5w)/n, h3w/n, h3/n, (h3-h3w)/n, strings.Join(per, " "))
		}
	}
}

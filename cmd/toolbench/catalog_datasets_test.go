//go:build datasets

package main

// Tests on the 73-server catalog and the public datasets, which live
// outside the repository (docs/datasets.md): go test -tags datasets
// ./cmd/toolbench/ (.ci/run runs it when they are beside the checkout).

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolsift/toolsift/internal/dataset"
)

// TestCatalogQueries checks the hand-written queries for the real MCP
// catalog (benchmarks/testdata/catalog_queries.jsonl) and the paraphrase
// sets (benchmarks/testdata/paraphrase) against their catalogs' names
// (the shared catalogs beside the checkout).
func TestCatalogQueries(t *testing.T) {
	shared := filepath.Join("..", "..", "..", "shared")
	testdata := filepath.Join("..", "..", "benchmarks", "testdata")
	for _, c := range []struct{ catalog, queries string }{
		{filepath.Join(shared, "mcp", "catalog.jsonl"), filepath.Join(testdata, "catalog_queries.jsonl")},
		{filepath.Join(shared, "mcp", "catalog.jsonl"), filepath.Join(testdata, "paraphrase", "mcp", "queries.jsonl")},
		{filepath.Join(shared, "datasets", "bfcl", "tools.jsonl"), filepath.Join(testdata, "paraphrase", "bfcl", "queries.jsonl")},
	} {
		t.Run(c.queries, func(t *testing.T) {
			queries, err := dataset.LoadQueries(c.queries)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(c.catalog); err != nil {
				t.Fatalf("shared catalog not present (docs/datasets.md): %v", err)
			}
			e := &env{stdout: io.Discard, stderr: io.Discard}
			tools, err := loadToolsQualified(e, c.catalog)
			if err != nil {
				t.Fatal(err)
			}
			names := map[string]bool{}
			for _, tl := range tools {
				names[tl.Name] = true
			}
			for _, q := range queries {
				for _, g := range q.Groups() {
					for _, n := range g {
						if !names[n] {
							t.Errorf("query %s: gold %q is not a catalog tool", q.ID, n)
						}
					}
				}
			}
		})
	}
}

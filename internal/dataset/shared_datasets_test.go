//go:build datasets

package dataset_test

// Tests on the public datasets, which live outside the repository
// (docs/datasets.md): go test -tags datasets ./internal/dataset/ (.ci/run
// runs it when they are beside the checkout).

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/toolsift/toolsift/internal/dataset"
)

// TestSharedDatasets reads the shared datasets when they are beside the
// checkout, and checks that every gold tool exists.
func TestSharedDatasets(t *testing.T) {
	for _, name := range []string{"bfcl", "sealtools"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("..", "..", "..", "shared", "datasets", name)
			if _, err := os.Stat(dir); err != nil {
				t.Fatalf("shared dataset %s not present (docs/datasets.md): %v", dir, err)
			}
			tools, err := dataset.LoadTools(filepath.Join(dir, "tools.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			qs, err := dataset.LoadQueries(filepath.Join(dir, "queries.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			names := map[string]bool{}
			for _, tl := range tools {
				names[tl.Name] = true
			}
			for _, q := range qs {
				for _, g := range q.Groups() {
					for _, n := range g {
						if !names[n] {
							t.Errorf("query %s: gold %q not in tools", q.ID, n)
						}
					}
				}
			}
			t.Logf("%s: %d tools, %d queries", name, len(tools), len(qs))
		})
	}
}

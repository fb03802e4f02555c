//go:build datasets

package encoder_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/toolindex"
)

// TestUSEQueriesOnDatasets embeds every tool's semantic document (as the
// index embeds it) and every query of the public datasets (docs/datasets.md:
// $TOOLSIFT_DATASETS, else ../shared/datasets beside the checkout) with
// Embed and with EmbedQueries, and reports the least cosine between the
// two per dataset; it fails below minUSECosine, or when EmbedQueries's
// vectors on another assembly kernel (AVX-512's int16 kernels) are not
// those of the first (AVX2's) to the bit. .ci/run runs it (go test
// -tags datasets -run USEQueriesOnDatasets ./encoder/) when the datasets
// are there; under the tag, missing datasets fail the test.
func TestUSEQueriesOnDatasets(t *testing.T) {
	root := os.Getenv("TOOLSIFT_DATASETS")
	if root == "" {
		root = filepath.Join("..", "..", "shared", "datasets")
	}
	dirs, err := filepath.Glob(filepath.Join(root, "*", "tools.jsonl"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no */tools.jsonl in %s (docs/datasets.md; or set TOOLSIFT_DATASETS): %v", root, err)
	}
	u := mustUSE(t)
	ctx := context.Background()
	for _, tf := range dirs {
		dir := filepath.Dir(tf)
		var tools, queries []string
		readJSONL(t, tf, func(line []byte) {
			var tl tool.Tool
			if err := json.Unmarshal(line, &tl); err != nil {
				t.Fatalf("%s: %v", tf, err)
			}
			tools = append(tools, toolindex.SemanticDocument(tl))
		})
		readJSONL(t, filepath.Join(dir, "queries.jsonl"), func(line []byte) {
			var q struct {
				Query string `json:"query"`
			}
			if err := json.Unmarshal(line, &q); err != nil {
				t.Fatalf("%s: %v", dir, err)
			}
			queries = append(queries, q.Query)
		})
		for _, set := range []struct {
			name  string
			texts []string
		}{{"tools", tools}, {"queries", queries}} {
			worst, at := 1.0, -1
			for i := 0; i < len(set.texts); i += 64 {
				batch := set.texts[i:min(i+64, len(set.texts))]
				d, err := u.Embed(ctx, batch)
				if err != nil {
					t.Fatal(err)
				}
				q, err := u.EmbedQueries(ctx, batch)
				if err != nil {
					t.Fatal(err)
				}
				kernels, vecs := queryVectorsPerKernel(t, u, batch, false)
				for i := 1; i < len(kernels); i++ { // none with the portable build
					checkSameVectors(t, batch, kernels[0], kernels[i], vecs[0], vecs[i])
				}
				for j := range batch {
					if c := cosine32(q[j], d[j]); c < worst {
						worst, at = c, i+j
					}
				}
			}
			t.Logf("%s: %d %s, least cosine of EmbedQueries to Embed %.7f (text %d)", filepath.Base(dir), len(set.texts), set.name, worst, at)
			if worst < minUSECosine {
				t.Errorf("%s %s: text %d %.60q: cosine %.6f, want ≥ %v", filepath.Base(dir), set.name, at, set.texts[at], worst, minUSECosine)
			}
		}
	}
}

func readJSONL(t *testing.T, path string, f func([]byte)) {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		f(sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

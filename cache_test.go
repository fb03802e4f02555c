package toolsift_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/encoder"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/internal/testserver"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/toolindex"
)

// countingEmbedder counts the texts its embedder embeds.
type countingEmbedder struct {
	toolindex.Embedder
	mu    sync.Mutex
	texts int
}

func (e *countingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	e.mu.Lock()
	e.texts += len(texts)
	e.mu.Unlock()
	return e.Embedder.Embed(ctx, texts)
}

func (e *countingEmbedder) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.texts
}

// TestOpenCachesDerivedData: the second Open of a config finds its tools'
// vectors, its server documents' vectors and token costs in the cache: it
// embeds one document per index (to learn the embedder's dimension) and
// counts nothing, and
// ranks and prices the catalog exactly as the first. The first Open
// embeds the server documents too, so that no step pays for them. Neither
// the servers' secrets nor the user's queries reach the cache folder.
func TestOpenCachesDerivedData(t *testing.T) {
	bin := testserver.Command(t)
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	cfg := map[string]any{"mcpServers": map[string]any{
		"local": map[string]any{"command": bin, "env": map[string]string{"TESTSERVER_VALUE": "env-s3cr3t"}},
		"other": map[string]any{"command": bin},
	}}
	data, _ := json.Marshal(cfg)
	path := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.WaitLimit())
	defer cancel()
	const query = "query-s3cr3t: echo this text back to me"

	use, err := encoder.NewUSE(nil)
	if err != nil {
		t.Fatal(err)
	}
	type run struct {
		embedded, encoded int // at Open
		stepEmbedded      int // by the first Search and Think: their queries
		top               []string
		tokens, tools     int
	}
	open := func() run {
		local, err := toolindex.NewLocalEmbedder(nil)
		if err != nil {
			t.Fatal(err)
		}
		emb := &countingEmbedder{Embedder: local}
		sem := &countingEmbedder{Embedder: use}
		ts, err := toolsift.Open(ctx, path, &toolsift.Options{Embedder: emb, Semantic: sem, Store: dirStore(t, cache)})
		if err != nil {
			t.Fatal(err)
		}
		defer ts.Close()
		embedded, encoded := emb.count(), sem.count()
		found, err := ts.Search(ctx, query, 3)
		if err != nil {
			t.Fatal(err)
		}
		off, err := ts.Think(ctx, think.Request{Query: retrieval.Query{Task: query}})
		if err != nil {
			t.Fatal(err)
		}
		// The call starts the lazy server on the second run.
		if res, err := ts.Call(ctx, "local__where", nil); err != nil || !strings.Contains(res.Content, "env-s3cr3t") {
			t.Fatalf("call: %+v, %v", res, err)
		}
		r := run{embedded: embedded, encoded: encoded, tokens: off.AllTokens, tools: off.AllTools,
			stepEmbedded: emb.count() + sem.count() - embedded - encoded}
		for _, m := range found {
			r.top = append(r.top, m.Tool.Name)
		}
		return r
	}
	first := open()
	if first.embedded != 6+2 || first.encoded != 6+2 || first.tools != 6 || first.tokens == 0 {
		t.Fatalf("first run: %+v; want 6 tools and 2 server documents embedded and encoded, 6 tools priced", first)
	}
	second := open()
	if second.embedded != 2 || second.encoded != 2 {
		t.Errorf("second run embedded %d and encoded %d documents; want 2 each (the tool and server indexes learn their dimension from one document each), the rest from the cache", second.embedded, second.encoded)
	}
	if first.stepEmbedded != second.stepEmbedded {
		t.Errorf("the first steps embedded %d texts, then %d: want the queries only, the same", first.stepEmbedded, second.stepEmbedded)
	}
	if first.tokens != second.tokens || first.tools != second.tools || strings.Join(first.top, ",") != strings.Join(second.top, ",") {
		t.Errorf("runs differ: %+v vs %+v", first, second)
	}
	for _, sub := range []string{"catalog", "vectors", "tokens"} {
		if m, _ := filepath.Glob(filepath.Join(cache, sub, "*")); len(m) == 0 {
			t.Errorf("nothing cached in %s", sub)
		}
	}
	err = filepath.WalkDir(cache, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if fi, _ := d.Info(); fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", p, fi.Mode().Perm())
		}
		b, err := os.ReadFile(p)
		for _, s := range []string{"env-s3cr3t", "query-s3cr3t", "echo this text"} {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s holds %q", p, s)
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCacheFolderBeforeStore: the vectors and token costs of a cache
// folder written before the Store seam (testdata/cache-before-store, by
// toolsift.New at the commit before it, over these tools with NoSemantic)
// are read as they are: New embeds none of the tools' documents, and the
// catalog costs what a cold start counts.
func TestCacheFolderBeforeStore(t *testing.T) {
	ctx := context.Background()
	tools := []tool.Tool{
		{Name: "fs__read", Description: "Read a file.", InputSchema: []byte(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
		{Name: "fs__write", Description: "Write a file.", InputSchema: []byte(`{"type":"object","properties":{"path":{"type":"string"},"text":{"type":"string"}}}`)},
		{Name: "web__search", Description: "Search the web.", InputSchema: []byte(`{"type":"object","properties":{"q":{"type":"string"}}}`)},
	}
	open := func(st store.Store) (embedded, tokens int) {
		local, err := toolindex.NewLocalEmbedder(nil)
		if err != nil {
			t.Fatal(err)
		}
		emb := &countingEmbedder{Embedder: local}
		var log testenv.Buffer
		ts, err := toolsift.New(ctx, tools, &toolsift.Options{Embedder: emb, NoSemantic: true, Store: st,
			Logger: slog.New(slog.NewTextHandler(&log, nil))})
		if err != nil {
			t.Fatal(err)
		}
		defer ts.Close()
		if log.String() != "" {
			t.Errorf("warnings:\n%s", log.String())
		}
		embedded = emb.count() // before the step embeds its query
		off, err := ts.Think(ctx, think.Request{Query: retrieval.Query{Task: "read a file"}})
		if err != nil {
			t.Fatal(err)
		}
		return embedded, off.AllTokens // the catalog's cost
	}
	coldEmbedded, coldTokens := open(store.NewMemory())
	dir := filepath.Join(t.TempDir(), "cache")
	if err := os.CopyFS(dir, os.DirFS("testdata/cache-before-store")); err != nil {
		t.Fatal(err)
	}
	warmEmbedded, warmTokens := open(dirStore(t, dir))
	// One document is embedded to learn the embedder's dimension.
	if coldEmbedded != len(tools) || warmEmbedded != 1 || warmTokens != coldTokens {
		t.Errorf("over the old folder: %d texts embedded, catalog %d tokens; cold: %d texts, %d tokens; want 1 and %d texts, the same cost",
			warmEmbedded, warmTokens, coldEmbedded, coldTokens, len(tools))
	}
}

package toolindex_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolsift/toolsift/toolindex"
)

func TestSaveLoadRoundTrip(t *testing.T) {
	ctx := context.Background()
	emb := newWordEmbedder(64)
	ix := newTestIndex(t, emb, nil, testTools...)
	ix.Remove("math__factorial") // a freed slot must not confuse the save
	dir := filepath.Join(t.TempDir(), "idx")
	if err := ix.Save(dir); err != nil {
		t.Fatal(err)
	}
	emb.reset()
	got, err := toolindex.Load(ctx, dir, emb, nil)
	if err != nil {
		t.Fatal(err)
	}
	if calls, _ := emb.stats(); calls != 0 {
		t.Errorf("Load made %d Embed calls, want 0", calls)
	}
	if diff := cmp.Diff(slices.Collect(ix.All()), slices.Collect(got.All())); diff != "" {
		t.Errorf("tools after Load (-want +got):\n%s", diff)
	}
	if got.Dimension() != 64 {
		t.Errorf("Dimension = %d, want 64", got.Dimension())
	}
	for _, q := range []string{"weather forecast city", "github repository issue", "read a file", "state"} {
		vec := wordVector(q, 64)
		want, err := ix.SearchVector(ctx, vec, 3, nil)
		if err != nil {
			t.Fatal(err)
		}
		have, err := got.SearchVector(ctx, vec, 3, nil)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, have); diff != "" {
			t.Errorf("SearchVector(%q) after Load (-want +got):\n%s", q, diff)
		}
		if diff := cmp.Diff(ix.SearchLexical(q, 3, nil), got.SearchLexical(q, 3, nil)); diff != "" {
			t.Errorf("SearchLexical(%q) after Load (-want +got):\n%s", q, diff)
		}
	}
	// The loaded index keeps its hashes: the same tools are not re-embedded.
	st, err := got.Upsert(ctx, testTools...)
	if err != nil {
		t.Fatal(err)
	}
	if st.Embedded != 1 || st.Unchanged != 5 {
		t.Errorf("Upsert after Load: %+v, want only the removed tool embedded", st)
	}

	// Saving again replaces the old generation.
	if err := got.Save(dir); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		files = append(files, e.Name())
	}
	if len(files) != 3 || !slices.Contains(files, "manifest.json") {
		t.Errorf("files after a second Save = %v, want manifest.json and one tools/vectors pair", files)
	}
	again, err := toolindex.Load(ctx, dir, emb, nil)
	if err != nil {
		t.Fatal(err)
	}
	if again.Len() != len(testTools) {
		t.Errorf("Len after second Save/Load = %d, want %d", again.Len(), len(testTools))
	}
}

func TestSaveLoadEmpty(t *testing.T) {
	emb := newWordEmbedder(8)
	dir := t.TempDir()
	if err := newTestIndex(t, emb, nil).Save(dir); err != nil {
		t.Fatal(err)
	}
	ix, err := toolindex.Load(context.Background(), dir, emb, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ix.Len() != 0 {
		t.Errorf("Len = %d, want 0", ix.Len())
	}
	if _, err := ix.Upsert(context.Background(), testTools[0]); err != nil {
		t.Errorf("Upsert into a loaded empty index: %v", err)
	}
}

func TestLoadEmbedderMismatch(t *testing.T) {
	dir := t.TempDir()
	if err := newTestIndex(t, newWordEmbedder(64), nil, testTools...).Save(dir); err != nil {
		t.Fatal(err)
	}
	_, err := toolindex.Load(context.Background(), dir, newWordEmbedder(32), nil)
	if !errors.Is(err, toolindex.ErrEmbedderMismatch) {
		t.Fatalf("Load with another embedder: error = %v, want ErrEmbedderMismatch", err)
	}
	if !strings.Contains(err.Error(), "test-words:64") || !strings.Contains(err.Error(), "test-words:32") {
		t.Errorf("error %q should name both embedders", err)
	}
}

func TestLoadCorrupt(t *testing.T) {
	dataFile := func(t *testing.T, dir, prefix string) string {
		t.Helper()
		m, err := filepath.Glob(filepath.Join(dir, prefix+"-*"))
		if err != nil || len(m) != 1 {
			t.Fatalf("glob %s: %v %v", prefix, m, err)
		}
		return m[0]
	}
	tests := []struct {
		name     string
		damage   func(t *testing.T, dir string) string // returns the file that must be named
		wantKind error
	}{
		{"no manifest", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "manifest.json")
			os.Remove(p)
			return p
		}, toolindex.ErrCorrupt},
		{"manifest not JSON", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "manifest.json")
			os.WriteFile(p, []byte("{"), 0o644)
			return p
		}, toolindex.ErrCorrupt},
		{"future version", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "manifest.json")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, []byte(strings.Replace(string(b), `"version": 1`, `"version": 99`, 1)), 0o644)
			return p
		}, toolindex.ErrCorrupt},
		{"vectors missing", func(t *testing.T, dir string) string {
			p := dataFile(t, dir, "vectors")
			os.Remove(p)
			return p
		}, toolindex.ErrCorrupt},
		{"vectors truncated", func(t *testing.T, dir string) string {
			p := dataFile(t, dir, "vectors")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)-4], 0o644)
			return p
		}, toolindex.ErrCorrupt},
		{"tools altered", func(t *testing.T, dir string) string {
			p := dataFile(t, dir, "tools")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, []byte(strings.Replace(string(b), "weather", "wether", 1)), 0o644)
			return p
		}, toolindex.ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			emb := newWordEmbedder(16)
			dir := t.TempDir()
			if err := newTestIndex(t, emb, nil, testTools...).Save(dir); err != nil {
				t.Fatal(err)
			}
			file := tt.damage(t, dir)
			_, err := toolindex.Load(context.Background(), dir, emb, nil)
			if !errors.Is(err, tt.wantKind) {
				t.Fatalf("Load error = %v, want %v", err, tt.wantKind)
			}
			if !strings.Contains(err.Error(), file) {
				t.Errorf("error %q does not name %s", err, file)
			}
		})
	}
}

package toolindex_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/toolindex"
)

// editManifest rewrites dir's manifest.json through edit.
func editManifest(t testing.TB, dir string, edit func(m map[string]any)) {
	t.Helper()
	p := filepath.Join(dir, "manifest.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	b, _ = json.Marshal(m)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLoadCraftedManifest: counts that the data files cannot hold are an
// ErrCorrupt before anything is allocated by them, not a panic or an
// out-of-memory crash. The data files themselves are intact (their sizes
// and hashes match).
func TestLoadCraftedManifest(t *testing.T) {
	for _, tt := range []struct {
		name  string
		tools any
		dim   any
	}{
		{"huge tool count", 1e15, 16},
		{"huge dimension", len(testTools), 1 << 40},
		{"both huge", 1 << 31, 1 << 31},
		{"dimension overflows the product", len(testTools), 1 << 62},
		{"dimension over uint32", len(testTools), 1<<32 + 16},
		{"zero tools, huge dimension", 0, 1 << 40},
	} {
		t.Run(tt.name, func(t *testing.T) {
			emb := newWordEmbedder(16)
			dir := t.TempDir()
			if err := newTestIndex(t, emb, nil, testTools...).Save(dir); err != nil {
				t.Fatal(err)
			}
			editManifest(t, dir, func(m map[string]any) { m["tools"], m["dimension"] = tt.tools, tt.dim })
			_, err := toolindex.Load(context.Background(), dir, emb, nil)
			if !errors.Is(err, toolindex.ErrCorrupt) {
				t.Errorf("Load = %v, want ErrCorrupt", err)
			}
		})
	}
}

// TestSaveRemovesStaleTempFiles: the temporary files of saves that were
// killed half way are removed by the next Save.
func TestSaveRemovesStaleTempFiles(t *testing.T) {
	emb := newWordEmbedder(16)
	ix := newTestIndex(t, emb, nil, testTools...)
	dir := t.TempDir()
	if err := ix.Save(dir); err != nil {
		t.Fatal(err)
	}
	stale := []string{".tools-20260101T000000-0a0b0c0d.jsonl.tmp-123", ".vectors-20260101T000000-0a0b0c0d.bin.tmp-456", ".manifest.json.tmp-789"}
	for _, n := range stale {
		if err := os.WriteFile(filepath.Join(dir, n), make([]byte, 1<<20), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Not ours: kept.
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := ix.Save(dir); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
		if slices.Contains(stale, e.Name()) {
			t.Errorf("stale temp file %s is still there", e.Name())
		}
	}
	if !slices.Contains(names, "notes.txt") || len(names) != 4 {
		t.Errorf("dir holds %v, want the manifest, two data files and notes.txt", names)
	}
	if _, err := toolindex.Load(context.Background(), dir, emb, nil); err != nil {
		t.Error(err)
	}
}

// TestSaveLoadInvalidUTF8: JSON cannot carry invalid UTF-8, so the loaded
// tool's bytes differ; its hash must then be that of the loaded bytes, not
// the old one.
func TestSaveLoadInvalidUTF8(t *testing.T) {
	ctx := context.Background()
	emb := newWordEmbedder(16)
	bad := tool.Tool{Name: "bad__tool", Description: "caf\xe9 au lait", InputSchema: json.RawMessage(`{"type":"object","description":"\xff"}`)}.WithHash()
	ix := newTestIndex(t, emb, nil, append(slices.Clone(testTools), bad)...)
	dir := t.TempDir()
	if err := ix.Save(dir); err != nil {
		t.Fatal(err)
	}
	got, err := toolindex.Load(ctx, dir, emb, nil)
	if err != nil {
		t.Fatal(err)
	}
	for tl := range got.All() {
		if tl.Hash != tool.ContentHash(tl) {
			t.Errorf("%s: hash %s, but its content hashes to %s", tl.Name, tl.Hash, tool.ContentHash(tl))
		}
		if tl.Name == bad.Name && !strings.Contains(tl.Description, "\uFFFD") {
			t.Errorf("description %q", tl.Description)
		}
	}
	// The live tool (original bytes) is seen as changed; valid ones not.
	st, err := got.Upsert(ctx, append(slices.Clone(testTools), bad)...)
	if err != nil {
		t.Fatal(err)
	}
	if st.Changed != 1 || st.Added != 0 {
		t.Errorf("Upsert after Load: %+v, want the one tool with invalid UTF-8 changed", st)
	}
}

// FuzzLoad loads an index whose manifest is arbitrary bytes, beside intact
// data files: Load must return an index or an error, never panic or
// allocate by counts it has not checked.
func FuzzLoad(f *testing.F) {
	emb := newWordEmbedder(16)
	dir := f.TempDir()
	if err := newTestIndex(f, emb, nil, testTools...).Save(dir); err != nil {
		f.Fatal(err)
	}
	// Fixed data file names, so that the seeds in testdata/fuzz can name
	// them.
	for _, prefix := range []string{"tools", "vectors"} {
		m, _ := filepath.Glob(filepath.Join(dir, prefix+"-*"))
		if len(m) != 1 {
			f.Fatalf("glob %s: %v", prefix, m)
		}
		ext := filepath.Ext(m[0])
		if err := os.Rename(m[0], filepath.Join(dir, prefix+"-seed"+ext)); err != nil {
			f.Fatal(err)
		}
	}
	editManifest(f, dir, func(m map[string]any) {
		m["tools_file"].(map[string]any)["name"] = "tools-seed.jsonl"
		m["vectors_file"].(map[string]any)["name"] = "vectors-seed.bin"
	})
	good, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(strings.Replace(string(good), `"tools":`, `"tools":1000000000000`+`,"x":`, 1)))
	f.Add([]byte(strings.Replace(string(good), `"dimension":16`, `"dimension":4294967312`, 1)))
	f.Fuzz(func(t *testing.T, manifest []byte) {
		// Fuzz runs its function one call at a time in each process, and
		// Load only reads: one folder will do.
		if err := os.WriteFile(filepath.Join(dir, "manifest.json"), manifest, 0o644); err != nil {
			t.Fatal(err)
		}
		ix, err := toolindex.Load(context.Background(), dir, emb, nil)
		if err != nil {
			if !errors.Is(err, toolindex.ErrCorrupt) && !errors.Is(err, toolindex.ErrEmbedderMismatch) {
				t.Fatalf("Load error %v wraps neither ErrCorrupt nor ErrEmbedderMismatch", err)
			}
			return
		}
		if ix.Len() != len(testTools) {
			t.Fatalf("loaded %d tools from files holding %d", ix.Len(), len(testTools))
		}
	})
}

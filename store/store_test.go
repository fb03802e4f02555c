package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/toolsift/toolsift/internal/cachefile"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/store/storetest"
)

func TestMemory(t *testing.T) {
	storetest.Run(t, func(*testing.T) store.Store { return store.NewMemory() })
}

func TestDir(t *testing.T) {
	storetest.RunShared(t, func(t *testing.T) (store.Store, store.Store) {
		dir := t.TempDir()
		a, err := store.NewDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		b, err := store.NewDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		return a, b
	})
}

// TestDirFiles: a key is a file at its path, so caches written before the
// store keep working, and what is not a key is neither listed nor read.
func TestDirFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := store.NewDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "catalog/everything-1a2b.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "catalog", "everything-1a2b.json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the value's file: %v, %v; want mode 0600", fi, err)
	}
	os.WriteFile(filepath.Join(dir, "catalog", ".tmp-123"), []byte("x"), 0o600)
	os.WriteFile(filepath.Join(dir, "catalog", "has space"), []byte("x"), 0o600)
	if _, err := s.Lock(ctx, "catalog/everything-1a2b.json"); err != nil {
		t.Fatal(err)
	}
	keys, err := s.List(ctx, "")
	if err != nil || !slices.Equal(keys, []string{"catalog/everything-1a2b.json"}) {
		t.Fatalf("List = %q, %v; want only the key (no temporary files, locks or foreign names)", keys, err)
	}

	// A file others may write is refused, and the error names it.
	p := filepath.Join(dir, "catalog", "everything-1a2b.json")
	os.Chmod(p, 0o666)
	if _, err := s.Get(ctx, "catalog/everything-1a2b.json"); !errors.Is(err, cachefile.ErrUnsafe) {
		t.Fatalf("Get of a world-writable file: %v, want ErrUnsafe", err)
	}
	// A FIFO in a value's place does not hang the reader.
	os.Remove(p)
	if err := mkfifo(p); err == nil {
		if _, err := s.Get(ctx, "catalog/everything-1a2b.json"); !errors.Is(err, cachefile.ErrUnsafe) {
			t.Fatalf("Get of a FIFO: %v, want ErrUnsafe", err)
		}
	}
}

func TestNewDirRefuses(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, nil, 0o600)
	if _, err := store.NewDir(f); err == nil {
		t.Fatal("NewDir over a file: no error")
	}
	open := t.TempDir()
	os.Chmod(open, 0o777)
	if _, err := store.NewDir(open); !errors.Is(err, cachefile.ErrUnsafe) {
		t.Fatalf("NewDir over a world-writable folder: %v, want ErrUnsafe", err)
	}
}

// TestGetBounded: a value over the caller's limit is refused with
// ErrTooLarge by every store; a Dir refuses a file by its size, without
// reading it.
func TestGetBounded(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d, err := store.NewDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]store.Store{"dir": d, "memory": store.NewMemory()} {
		t.Run(name, func(t *testing.T) {
			if err := s.Put(ctx, "k/v", []byte("12345")); err != nil {
				t.Fatal(err)
			}
			if v, err := store.GetBounded(ctx, s, "k/v", 5); err != nil || string(v) != "12345" {
				t.Errorf("GetBounded at the limit = %q, %v", v, err)
			}
			if _, err := store.GetBounded(ctx, s, "k/v", 4); !errors.Is(err, store.ErrTooLarge) || !strings.Contains(err.Error(), "over the limit of 4") {
				t.Errorf("GetBounded over the limit: %v, want ErrTooLarge naming the limit", err)
			}
			if _, err := store.GetBounded(ctx, s, "k/none", 4); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("GetBounded of a missing key: %v, want ErrNotFound", err)
			}
		})
	}
	// A sparse file of 1 GiB is refused at once.
	f, err := os.Create(filepath.Join(dir, "k", "huge"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := store.GetBounded(ctx, d, "k/huge", 1<<20); !errors.Is(err, store.ErrTooLarge) {
		t.Errorf("GetBounded of a 1 GiB file: %v, want ErrTooLarge", err)
	}
}

// folders returns the folders under root (root and .locks/ excepted), as
// slash paths, each with how many entries it holds.
func folders(t *testing.T, root string) map[string]int {
	t.Helper()
	got := map[string]int{}
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !e.IsDir() || p == root {
			return nil
		}
		if e.Name() == ".locks" {
			return filepath.SkipDir
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		got[filepath.ToSlash(rel)] = len(entries)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestDirDeleteRemovesEmptyFolders: a Delete removes the key's folders it
// leaves empty, up to the first that is not, and never the store's own
// folder or .locks/; a folder with another key keeps it.
func TestDirDeleteRemovesEmptyFolders(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	s, err := store.NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a/b/c/one.json", "a/b/c/two.json", "a/x.json", "top.json"} {
		if err := s.Put(ctx, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	unlock, err := s.Lock(ctx, "a/b/c/one.json")
	if err != nil {
		t.Fatal(err)
	}
	unlock()

	// One of two keys in a folder: the folder and the other key stay.
	if err := s.Delete(ctx, "a/b/c/one.json"); err != nil {
		t.Fatal(err)
	}
	if got, want := folders(t, root), map[string]int{"a": 2, "a/b": 1, "a/b/c": 1}; !maps.Equal(got, want) {
		t.Fatalf("folders after deleting one of two keys: %v, want %v", got, want)
	}
	if v, err := s.Get(ctx, "a/b/c/two.json"); err != nil || string(v) != "a/b/c/two.json" {
		t.Fatalf("the other key: %q, %v", v, err)
	}

	// The last key of a nested folder: its empty folders go, up to the
	// first holding something (a, with x.json).
	if err := s.Delete(ctx, "a/b/c/two.json"); err != nil {
		t.Fatal(err)
	}
	if got, want := folders(t, root), map[string]int{"a": 1}; !maps.Equal(got, want) {
		t.Fatalf("folders after deleting a nested folder's last key: %v, want %v", got, want)
	}

	// Everything: only the store's folder and .locks/ are left.
	for _, k := range []string{"a/x.json", "top.json", "a/never-was.json"} {
		if err := s.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	if got := folders(t, root); len(got) != 0 {
		t.Fatalf("folders after deleting every key: %v, want none", got)
	}
	if _, err := os.Stat(filepath.Join(root, ".locks")); err != nil {
		t.Errorf(".locks/ after deleting every key: %v", err)
	}
	if keys, err := s.List(ctx, ""); err != nil || len(keys) != 0 {
		t.Fatalf("List after deleting every key = %q, %v", keys, err)
	}
	// The store works on: its folder is still there and Put makes the
	// folders again.
	if err := s.Put(ctx, "a/b/again.json", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get(ctx, "a/b/again.json"); err != nil || string(v) != "v" {
		t.Fatalf("Get after Put into removed folders: %q, %v", v, err)
	}

	// A store that never locked (no .locks/ to keep its folder from being
	// empty): its folder stays when its last key goes, a key at the top
	// or in a folder.
	for _, keys := range [][]string{{"top.json"}, {"x/y/z.json"}, {"x/y.json", "top.json"}} {
		root := t.TempDir()
		s, err := store.NewDir(root)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			if err := s.Put(ctx, k, []byte("v")); err != nil {
				t.Fatal(err)
			}
		}
		for _, k := range keys {
			if err := s.Delete(ctx, k); err != nil {
				t.Fatal(err)
			}
		}
		if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
			t.Fatalf("the store's folder after deleting %q: %v, %v", keys, fi, err)
		}
		if got := folders(t, root); len(got) != 0 {
			t.Fatalf("folders after deleting %q: %v, want none", keys, got)
		}
	}
}

// TestDirDeletePrefix: a prefix delete in a folder removes the folders it
// leaves empty (not those holding something that is not a key, nor the
// store's own, nor .locks/), and follows no symbolic link out of the
// store: a link where a prefix's folder should be is refused before
// anything goes, and a link below it is not a key and stays, with what
// it points to.
func TestDirDeletePrefix(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	s, err := store.NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"audit/d1/a/1.json", "audit/d1/a/2.json", "audit/d1/b/1.json", "audit/d1/3.json", "audit/d2/1.json", "audit/d3/1.json", "top.json"} {
		if err := s.Put(ctx, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	unlock, err := s.Lock(ctx, "locks/x")
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	if n, err := s.DeletePrefix(ctx, "audit/d1/"); n != 4 || err != nil {
		t.Fatalf("DeletePrefix audit/d1/ = %d, %v; want 4", n, err)
	}
	if got, want := folders(t, root), map[string]int{"audit": 2, "audit/d2": 1, "audit/d3": 1}; !maps.Equal(got, want) {
		t.Fatalf("folders after DeletePrefix audit/d1/: %v, want %v", got, want)
	}

	// A file that is not a key keeps its folder.
	if err := os.WriteFile(filepath.Join(root, "audit", "d2", ".tmp-1"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if n, err := s.DeletePrefix(ctx, "audit/d2/"); n != 1 || err != nil {
		t.Fatalf("DeletePrefix audit/d2/ = %d, %v; want 1", n, err)
	}
	if got, want := folders(t, root), map[string]int{"audit": 2, "audit/d2": 1, "audit/d3": 1}; !maps.Equal(got, want) {
		t.Fatalf("folders after DeletePrefix audit/d2/ (a temporary file left): %v, want %v", got, want)
	}

	// Links out of the store: below the prefix's folder, not followed
	// (not a key: kept, and so is its folder); in place of a folder of the
	// prefix, refused.
	outside := t.TempDir()
	if err := os.MkdirAll(filepath.Join(outside, "d9"), 0o700); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(outside, "d9", "victim.json")
	if err := os.WriteFile(victim, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "d9"), filepath.Join(root, "audit", "d3", "link")); err != nil {
		t.Fatal(err)
	}
	if n, err := s.DeletePrefix(ctx, "audit/d3/"); n != 1 || err != nil {
		t.Fatalf("DeletePrefix audit/d3/ with a link in it = %d, %v; want 1 (the key)", n, err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "ext")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"ext/d9/", "ext/d9/victim", "ext/", "ext/d"} {
		if n, err := s.DeletePrefix(ctx, p); n != 0 || !errors.Is(err, cachefile.ErrUnsafe) {
			t.Errorf("DeletePrefix %q through a link out of the store = %d, %v; want 0, ErrUnsafe", p, n, err)
		}
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "keep me" {
		t.Fatalf("the file outside the store: %q, %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(root, "audit", "d3", "link")); err != nil {
		t.Fatalf("the link below a deleted prefix: %v, want it kept", err)
	}

	// The last keys: the store's folder and .locks/ stay.
	if err := os.Remove(filepath.Join(root, "audit", "d2", ".tmp-1")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, "audit", "d3", "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, "ext")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, "audit", "d3")); err != nil {
		t.Fatal(err)
	}
	if n, err := s.DeletePrefix(ctx, "audit/"); n != 0 || err != nil {
		t.Fatalf("DeletePrefix audit/ = %d, %v; want 0", n, err)
	}
	if n, err := s.DeletePrefix(ctx, "top"); n != 1 || err != nil {
		t.Fatalf("DeletePrefix top = %d, %v; want 1", n, err)
	}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		t.Fatalf("the store's folder: %v, %v", fi, err)
	}
	if _, err := os.Stat(filepath.Join(root, ".locks")); err != nil {
		t.Errorf(".locks/ after deleting every key: %v", err)
	}
}

// TestDirPutDeleteRace: Puts and Deletes of keys in one folder, from two
// Dir values over it (two processes), race: a Delete of the folder's last
// key removes the folder while a Put is about to write into it. Every Put
// returns nil and has stored its value.
func TestDirPutDeleteRace(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	var dirs [2]*store.Dir
	for i := range dirs {
		d, err := store.NewDir(root)
		if err != nil {
			t.Fatal(err)
		}
		dirs[i] = d
	}
	const writers, rounds = 4, 500
	var wg sync.WaitGroup
	for w := range writers {
		s := dirs[w%len(dirs)]
		key := fmt.Sprintf("a/k%d", w+1) // each goroutine writes its own key
		wg.Go(func() {
			for i := range rounds {
				v := fmt.Appendf(nil, "%s %d", key, i)
				if err := s.Put(ctx, key, v); err != nil {
					t.Errorf("Put %s: %v", key, err)
					return
				}
				if got, err := s.Get(ctx, key); err != nil || !bytes.Equal(got, v) {
					t.Errorf("Get %s right after its Put: %q, %v; want %q", key, got, err, v)
					return
				}
				if err := s.Delete(ctx, key); err != nil {
					t.Errorf("Delete %s: %v", key, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if got := folders(t, root); len(got) != 0 {
		t.Errorf("folders after every key was deleted: %v, want none", got)
	}
}

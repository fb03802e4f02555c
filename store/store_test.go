package store_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

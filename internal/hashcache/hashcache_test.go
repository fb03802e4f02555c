package hashcache_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/toolsift/toolsift/internal/hashcache"
	"github.com/toolsift/toolsift/store"
)

var ctx = context.Background()

func key(s string) hashcache.Key { return sha256.Sum256([]byte(s)) }

func dirStore(t *testing.T, dir string) *store.Dir {
	t.Helper()
	d, err := store.NewDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func open(t *testing.T, st store.Store, kind string, maxBytes int64) *hashcache.File {
	t.Helper()
	f, err := hashcache.Open(ctx, st, "sub/c.bin", kind, maxBytes)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return f
}

func TestFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	st := dirStore(t, dir)
	path := filepath.Join(dir, "sub", "c.bin")
	f := open(t, st, "kind-a", 0)
	if f.Len() != 0 {
		t.Fatalf("Open of a missing value: %d records", f.Len())
	}
	if err := f.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Flush with nothing put wrote a file: %v", err)
	}
	f.Put(key("a"), []byte("alpha"))
	f.Put(key("b"), nil)
	if !f.Dirty() {
		t.Fatal("not dirty after Put")
	}
	if err := f.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	if di, _ := os.Stat(filepath.Dir(path)); di.Mode().Perm() != 0o700 {
		t.Errorf("folder mode %v, want 0700", di.Mode().Perm())
	}
	g := open(t, st, "kind-a", 0)
	if v, ok := g.Get(key("a")); !ok || string(v) != "alpha" {
		t.Errorf("a = %q, %v", v, ok)
	}
	if v, ok := g.Get(key("b")); !ok || len(v) != 0 {
		t.Errorf("b = %q, %v; want an empty record", v, ok)
	}
	if _, ok := g.Get(key("c")); ok {
		t.Error("c found")
	}
	// Another kind in the same value is not read as this one.
	h, err := hashcache.Open(ctx, st, "sub/c.bin", "kind-b", 0)
	if err == nil || h.Len() != 0 {
		t.Errorf("other kind: %d records, %v; want none and an error", h.Len(), err)
	}
}

// TestFileCorrupt: any damage to a value gives an empty cache and an error
// naming its key, never a wrong record or a panic; the next Flush replaces
// the value.
func TestFileCorrupt(t *testing.T) {
	dir := t.TempDir()
	st := dirStore(t, dir)
	path := filepath.Join(dir, "sub", "c.bin")
	f := open(t, st, "k", 0)
	for i := range 20 {
		f.Put(key(strconv.Itoa(i)), bytes.Repeat([]byte{byte(i)}, i))
	}
	if err := f.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	good, _ := os.ReadFile(path)
	damage := map[string][]byte{
		"empty":     {},
		"truncated": good[:len(good)/2],
		"bit flip":  flip(good, len(good)/3),
		"checksum":  flip(good, len(good)-1),
		"magic":     flip(good, 0),
		"trailing":  append(append([]byte{}, good...), 0),
		"not ours":  []byte(`{"format":1}`),
	}
	for name, data := range damage {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			g, err := hashcache.Open(ctx, st, "sub/c.bin", "k", 0)
			if g.Len() != 0 {
				t.Fatalf("%d records read from a damaged value", g.Len())
			}
			if !errors.Is(err, hashcache.ErrCorrupt) || !strings.Contains(err.Error(), "sub/c.bin") {
				t.Fatalf("error %v, want ErrCorrupt naming sub/c.bin", err)
			}
			g.Put(key("new"), []byte("x"))
			if err := g.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			if h := open(t, st, "k", 0); h.Len() != 1 {
				t.Fatalf("after Flush: %d records", h.Len())
			}
		})
	}
}

// TestFileOverLimit: a value larger than its records' bound allows is
// refused (and replaced) without being parsed.
func TestFileOverLimit(t *testing.T) {
	st := store.NewMemory()
	f := open(t, st, "k", 0)
	for i := range 100 {
		f.Put(key(strconv.Itoa(i)), make([]byte, 1000))
	}
	if err := f.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	g, err := hashcache.Open(ctx, st, "sub/c.bin", "k", 1000)
	if !errors.Is(err, hashcache.ErrCorrupt) || !strings.Contains(err.Error(), "over the limit") || g.Len() != 0 {
		t.Fatalf("a value over the limit: %d records, %v; want none and ErrCorrupt saying so", g.Len(), err)
	}
}

func flip(b []byte, i int) []byte {
	c := append([]byte{}, b...)
	c[i] ^= 0x40
	return c
}

// TestFileMerge: a writer keeps what another wrote since it read the value.
func TestFileMerge(t *testing.T) {
	st := store.NewMemory()
	a, b := open(t, st, "k", 0), open(t, st, "k", 0)
	a.Put(key("a"), []byte("1"))
	b.Put(key("b"), []byte("2"))
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if c := open(t, st, "k", 0); c.Len() != 2 {
		t.Fatalf("%d records; want both writers' records", c.Len())
	}
}

// TestFileBound: beyond maxBytes, records this process did not use go
// first.
func TestFileBound(t *testing.T) {
	st := store.NewMemory()
	old := open(t, st, "k", 0)
	for i := range 10 {
		old.Put(key("old"+strconv.Itoa(i)), make([]byte, 100))
	}
	if err := old.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	const rec = 32 + 4 + 100
	f := open(t, st, "k", 5*rec)
	for i := range 3 {
		f.Put(key("new"+strconv.Itoa(i)), make([]byte, 100))
	}
	if _, ok := f.Get(key("old7")); !ok {
		t.Fatal("old7 missing")
	}
	if err := f.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	g := open(t, st, "k", 0)
	if g.Len() != 5 {
		t.Fatalf("%d records, want 5", g.Len())
	}
	for _, k := range []string{"new0", "new1", "new2", "old7"} {
		if _, ok := g.Get(key(k)); !ok {
			t.Errorf("%s, used by the writer, was dropped", k)
		}
	}
}

// TestFileConcurrentProcesses: processes writing the same value at once
// never leave it unreadable, and, merging under the store's lock, lose no
// record.
func TestFileConcurrentProcesses(t *testing.T) {
	if os.Getenv("HASHCACHE_CHILD") != "" {
		return
	}
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for p := range 4 {
		wg.Go(func() {
			cmd := exec.Command(os.Args[0], "-test.run", "^TestFileChild$")
			cmd.Env = append(os.Environ(), "HASHCACHE_CHILD="+dir, "HASHCACHE_ID="+strconv.Itoa(p))
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("child %d: %v\n%s", p, err, out)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	f, err := hashcache.Open(ctx, dirStore(t, dir), "sub/c.bin", "k", 0)
	if err != nil {
		t.Fatalf("value unreadable after concurrent writers: %v", err)
	}
	if f.Len() != 4*50 {
		t.Fatalf("%d records; want every writer's, 200", f.Len())
	}
	temps, _ := filepath.Glob(filepath.Join(dir, "sub", ".tmp-*"))
	if len(temps) > 0 {
		t.Errorf("temporary files left: %v", temps)
	}
}

// TestFileChild is one writer of TestFileConcurrentProcesses.
func TestFileChild(t *testing.T) {
	dir := os.Getenv("HASHCACHE_CHILD")
	if dir == "" {
		t.Skip("run by TestFileConcurrentProcesses")
	}
	id := os.Getenv("HASHCACHE_ID")
	st := dirStore(t, dir)
	for round := range 10 {
		// A new File each round: a process that read the value before the
		// others wrote theirs.
		f, _ := hashcache.Open(ctx, st, "sub/c.bin", "k", 0)
		for i := range 5 {
			f.Put(key(id+"-"+strconv.Itoa(round)+"-"+strconv.Itoa(i)), bytes.Repeat([]byte(id), 1000))
		}
		if err := f.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCache(t *testing.T) {
	dir := t.TempDir()
	s := hashcache.New(dirStore(t, dir))
	k := key("doc")
	s.SetVector("emb:a:3", k, []float32{0.5, -0.25, 1})
	s.SetVector("emb:a:3", key("other"), []float32{1, 2}) // another length: refused
	hash := fmt.Sprintf("%x", key("tool"))
	s.SetCost("o200k_base/render-1", hash, 1234)
	s.SetCost("o200k_base/render-1", "not-hex", 7)
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// The files toolsift has always written: an existing cache folder
	// is read by this code and the other way round.
	for _, full := range []string{"vectors emb:a:3", "tokens o200k_base/render-1"} {
		sum := sha256.Sum256([]byte(full))
		file := filepath.Join(dir, strings.Fields(full)[0], hex.EncodeToString(sum[:12])+".bin")
		if _, err := os.Stat(file); err != nil {
			t.Errorf("the value of %q is not the file %s: %v", full, file, err)
		}
	}
	r := hashcache.New(dirStore(t, dir))
	var errs []error
	r.OnError = func(err error) { errs = append(errs, err) }
	if v, ok := r.Vector("emb:a:3", k); !ok || len(v) != 3 || v[1] != -0.25 {
		t.Errorf("vector = %v, %v", v, ok)
	}
	if _, ok := r.Vector("emb:a:3", key("other")); ok {
		t.Error("a vector of another length was stored")
	}
	if _, ok := r.Vector("emb:b:3", k); ok {
		t.Error("another embedder's vector returned")
	}
	if c, ok := r.Cost("o200k_base/render-1", hash); !ok || c != 1234 {
		t.Errorf("cost = %d, %v", c, ok)
	}
	if c, ok := r.Cost("o200k_base/render-1", "not-hex"); !ok || c != 7 {
		t.Errorf("cost of a non-hex hash = %d, %v", c, ok)
	}
	if _, ok := r.Cost("cl100k_base/render-1", hash); ok {
		t.Error("another tokenizer's cost returned")
	}
	if len(errs) != 0 {
		t.Errorf("errors: %v", errs)
	}
}

// failingStore is a Store whose writes fail.
type failingStore struct{ store.Store }

func (failingStore) Put(context.Context, string, []byte) error {
	return errors.New("disk full")
}

// TestCacheWriteFails: a store that refuses writes costs the cache its
// persistence, not its records in this process; the error is reported.
func TestCacheWriteFails(t *testing.T) {
	c := hashcache.New(failingStore{store.NewMemory()})
	var errs []error
	c.OnError = func(err error) { errs = append(errs, err) }
	c.SetCost("tok", "h", 3)
	err := c.Flush(ctx)
	if err == nil || !strings.Contains(err.Error(), "disk full") || !strings.Contains(err.Error(), "tokens/") {
		t.Fatalf("Flush: %v; want the store's error naming the value", err)
	}
	if len(errs) != 1 {
		t.Fatalf("OnError told %d times, want 1: %v", len(errs), errs)
	}
	if n, ok := c.Cost("tok", "h"); !ok || n != 3 {
		t.Fatalf("cost after a failed write = %d, %v; want 3", n, ok)
	}
}

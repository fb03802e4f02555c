package cachefile_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/toolsift/toolsift/internal/cachefile"
)

func key(s string) cachefile.Key { return sha256.Sum256([]byte(s)) }

func TestFileRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "c.bin")
	f, err := cachefile.Open(path, "kind-a", 0)
	if err != nil || f.Len() != 0 {
		t.Fatalf("Open of a missing file: %d records, %v", f.Len(), err)
	}
	if err := f.Flush(); err != nil {
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
	if err := f.Flush(); err != nil {
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
	g, err := cachefile.Open(path, "kind-a", 0)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := g.Get(key("a")); !ok || string(v) != "alpha" {
		t.Errorf("a = %q, %v", v, ok)
	}
	if v, ok := g.Get(key("b")); !ok || len(v) != 0 {
		t.Errorf("b = %q, %v; want an empty record", v, ok)
	}
	if _, ok := g.Get(key("c")); ok {
		t.Error("c found")
	}
	// Another kind in the same file is not read as this one.
	h, err := cachefile.Open(path, "kind-b", 0)
	if err == nil || h.Len() != 0 {
		t.Errorf("other kind: %d records, %v; want none and an error", h.Len(), err)
	}
}

// TestFileCorrupt: any damage to a file gives an empty cache and an error
// naming the file, never a wrong record or a panic; the next Flush
// replaces the file.
func TestFileCorrupt(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.bin")
	f, _ := cachefile.Open(path, "k", 0)
	for i := range 20 {
		f.Put(key(strconv.Itoa(i)), bytes.Repeat([]byte{byte(i)}, i))
	}
	if err := f.Flush(); err != nil {
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
			g, err := cachefile.Open(path, "k", 0)
			if g.Len() != 0 {
				t.Fatalf("%d records read from a damaged file", g.Len())
			}
			if len(data) > 0 && (!errors.Is(err, cachefile.ErrCorrupt) || !bytes.Contains([]byte(err.Error()), []byte(path))) {
				t.Fatalf("error %v, want ErrCorrupt naming %s", err, path)
			}
			g.Put(key("new"), []byte("x"))
			if err := g.Flush(); err != nil {
				t.Fatal(err)
			}
			h, err := cachefile.Open(path, "k", 0)
			if err != nil || h.Len() != 1 {
				t.Fatalf("after Flush: %d records, %v", h.Len(), err)
			}
		})
	}
}

func flip(b []byte, i int) []byte {
	c := append([]byte{}, b...)
	c[i] ^= 0x40
	return c
}

// TestFileMerge: a writer keeps what another wrote since it read the file.
func TestFileMerge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.bin")
	a, _ := cachefile.Open(path, "k", 0)
	b, _ := cachefile.Open(path, "k", 0)
	a.Put(key("a"), []byte("1"))
	b.Put(key("b"), []byte("2"))
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	c, err := cachefile.Open(path, "k", 0)
	if err != nil || c.Len() != 2 {
		t.Fatalf("%d records, %v; want both writers' records", c.Len(), err)
	}
}

// TestFileBound: beyond maxBytes, records this process did not use go
// first.
func TestFileBound(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.bin")
	old, _ := cachefile.Open(path, "k", 0)
	for i := range 10 {
		old.Put(key("old"+strconv.Itoa(i)), make([]byte, 100))
	}
	if err := old.Flush(); err != nil {
		t.Fatal(err)
	}
	const rec = 32 + 4 + 100
	f, _ := cachefile.Open(path, "k", 5*rec)
	for i := range 3 {
		f.Put(key("new"+strconv.Itoa(i)), make([]byte, 100))
	}
	if _, ok := f.Get(key("old7")); !ok {
		t.Fatal("old7 missing")
	}
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	g, _ := cachefile.Open(path, "k", 0)
	if g.Len() != 5 {
		t.Fatalf("%d records, want 5", g.Len())
	}
	for _, k := range []string{"new0", "new1", "new2", "old7"} {
		if _, ok := g.Get(key(k)); !ok {
			t.Errorf("%s, used by the writer, was dropped", k)
		}
	}
}

// TestFileConcurrentProcesses: processes writing the same file at once
// never leave it unreadable, and the last writer's records are all there.
func TestFileConcurrentProcesses(t *testing.T) {
	if os.Getenv("CACHEFILE_CHILD") != "" {
		return
	}
	path := filepath.Join(t.TempDir(), "c.bin")
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for p := range 4 {
		wg.Go(func() {
			cmd := exec.Command(os.Args[0], "-test.run", "^TestFileChild$")
			cmd.Env = append(os.Environ(), "CACHEFILE_CHILD="+path, "CACHEFILE_ID="+strconv.Itoa(p))
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
	f, err := cachefile.Open(path, "k", 0)
	if err != nil {
		t.Fatalf("file unreadable after concurrent writers: %v", err)
	}
	if f.Len() < 50 {
		t.Fatalf("%d records; want at least the last writer's 50", f.Len())
	}
	temps, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".tmp-*"))
	if len(temps) > 0 {
		t.Errorf("temporary files left: %v", temps)
	}
}

// TestFileChild is one writer of TestFileConcurrentProcesses.
func TestFileChild(t *testing.T) {
	path := os.Getenv("CACHEFILE_CHILD")
	if path == "" {
		t.Skip("run by TestFileConcurrentProcesses")
	}
	id := os.Getenv("CACHEFILE_ID")
	f, _ := cachefile.Open(path, "k", 0)
	for round := range 10 {
		for i := range 5 {
			f.Put(key(id+"-"+strconv.Itoa(round)+"-"+strconv.Itoa(i)), bytes.Repeat([]byte(id), 1000))
		}
		if err := f.Flush(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestStore(t *testing.T) {
	dir := t.TempDir()
	s := cachefile.NewStore(dir)
	k := key("doc")
	s.SetVector("emb:a:3", k, []float32{0.5, -0.25, 1})
	s.SetVector("emb:a:3", key("other"), []float32{1, 2}) // another length: refused
	hash := fmt.Sprintf("%x", key("tool"))
	s.SetCost("o200k_base/render-1", hash, 1234)
	s.SetCost("o200k_base/render-1", "not-hex", 7)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	r := cachefile.NewStore(dir)
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

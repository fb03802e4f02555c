// Package storetest holds the behaviour every store.Store must have, as
// tests an implementation runs from its own test file:
//
//	func TestStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { return open(t) })
//	}
//
// RunShared adds what a store shared between processes (or replicas) must
// do: two Store values over the same data see each other's writes and
// exclude each other's locks. RunWatcher holds a store.Watcher to its
// contract: the other Store's writes reported, in order, its own not.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolsift/toolsift/store"
)

// Run runs the tests of the store.Store contract; open returns a new,
// empty Store for each subtest (closed by the test).
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	ctx := context.Background()
	mk := func(t *testing.T) store.Store {
		s := open(t)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}

	t.Run("GetMissing", func(t *testing.T) {
		s := mk(t)
		_, err := s.Get(ctx, "catalog/none.json")
		if !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get of a missing key: %v, want ErrNotFound", err)
		}
	})

	t.Run("PutGetReplaceDelete", func(t *testing.T) {
		s := mk(t)
		for _, v := range [][]byte{[]byte("one"), {}, {0, 1, 2, 255, '\n', 0}, bytes.Repeat([]byte("x"), 3<<20)} {
			if err := s.Put(ctx, "a/b/c.bin", v); err != nil {
				t.Fatalf("Put %d bytes: %v", len(v), err)
			}
			got, err := s.Get(ctx, "a/b/c.bin")
			if err != nil || !bytes.Equal(got, v) {
				t.Fatalf("Get after Put of %d bytes: %d bytes, %v", len(v), len(got), err)
			}
		}
		got, _ := s.Get(ctx, "a/b/c.bin")
		if len(got) > 0 {
			got[0] ^= 0xff // the caller owns the slice
		}
		again, _ := s.Get(ctx, "a/b/c.bin")
		if !bytes.Equal(again, bytes.Repeat([]byte("x"), 3<<20)) {
			t.Fatal("modifying a slice Get returned changed the stored value")
		}
		if err := s.Delete(ctx, "a/b/c.bin"); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		if _, err := s.Get(ctx, "a/b/c.bin"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get after Delete: %v, want ErrNotFound", err)
		}
		if err := s.Delete(ctx, "a/b/c.bin"); err != nil {
			t.Fatalf("Delete of a missing key: %v, want nil", err)
		}
	})

	t.Run("List", func(t *testing.T) {
		s := mk(t)
		keys := []string{"catalog/b.json", "catalog/a.json", "catalogs/x", "trust/a.json", "catalog/sub/c.json", "z"}
		for _, k := range keys {
			if err := s.Put(ctx, k, []byte(k)); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range []struct {
			prefix string
			want   []string
		}{
			{"catalog/", []string{"catalog/a.json", "catalog/b.json", "catalog/sub/c.json"}},
			{"catalog", []string{"catalog/a.json", "catalog/b.json", "catalog/sub/c.json", "catalogs/x"}},
			{"catalog/a", []string{"catalog/a.json"}},
			{"nothing/", nil},
			{"", []string{"catalog/a.json", "catalog/b.json", "catalog/sub/c.json", "catalogs/x", "trust/a.json", "z"}},
		} {
			got, err := s.List(ctx, c.prefix)
			if err != nil {
				t.Fatalf("List %q: %v", c.prefix, err)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("List %q = %q, want %q", c.prefix, got, c.want)
			}
		}
	})

	t.Run("DeletePrefix", func(t *testing.T) {
		// store.DeletePrefix over this store (its own DeletePrefix when
		// it is a store.PrefixDeleter): the keys List lists for the prefix
		// go, counted; every other key stays, and a prefix's folders can
		// be written again.
		s := mk(t)
		if n, err := store.DeletePrefix(ctx, s, "audit/"); n != 0 || err != nil {
			t.Fatalf("DeletePrefix in an empty store = %d, %v; want 0, nil", n, err)
		}
		keys := []string{
			"audit/2026-01-01/1.json", "audit/2026-01-01/2.json", "audit/2026-01-01/sub/3.json",
			"audit/2026-01-02/1.json", "audit/2026-01-01x/1.json", "audits/2026-01-01/1.json",
			"catalog/a.json", "catalog/ab/c.json", "catalog/b.json", "catalogs/a.json",
			"a_b/x", "aXb/x", "z",
		}
		for _, k := range keys {
			if err := s.Put(ctx, k, []byte(k)); err != nil {
				t.Fatal(err)
			}
		}
		left := slices.Clone(keys)
		slices.Sort(left)
		for _, c := range []struct {
			prefix string
			gone   []string
		}{
			{"audit/2026-01-01/", []string{"audit/2026-01-01/1.json", "audit/2026-01-01/2.json", "audit/2026-01-01/sub/3.json"}},
			{"audit/2026-01-01/", nil}, // again: nothing left
			{"catalog/a", []string{"catalog/a.json", "catalog/ab/c.json"}},
			{"a_b/", []string{"a_b/x"}}, // "_" is a byte, not a pattern
			{"nothing/", nil},
			{"z/", nil}, // a key, not a folder
			{"z", []string{"z"}},
		} {
			n, err := store.DeletePrefix(ctx, s, c.prefix)
			if err != nil || n != len(c.gone) {
				t.Fatalf("DeletePrefix %q = %d, %v; want %d (%q)", c.prefix, n, err, len(c.gone), c.gone)
			}
			left = slices.DeleteFunc(left, func(k string) bool { return slices.Contains(c.gone, k) })
			got, err := s.List(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, left) {
				t.Fatalf("after DeletePrefix %q: %q, want %q", c.prefix, got, left)
			}
		}
		for _, k := range left {
			if v, err := s.Get(ctx, k); err != nil || string(v) != k {
				t.Errorf("Get %s after the prefix deletes: %q, %v", k, v, err)
			}
		}
		for _, p := range []string{"", "../", "a//", "/a"} {
			if n, err := store.DeletePrefix(ctx, s, p); n != 0 || !errors.Is(err, store.ErrKey) {
				t.Errorf("DeletePrefix %q = %d, %v; want 0, ErrKey", p, n, err)
			}
		}
		if got, _ := s.List(ctx, ""); !slices.Equal(got, left) {
			t.Fatalf("after refused prefixes: %q, want %q", got, left)
		}
		// The deleted prefix's folders are written again.
		if err := s.Put(ctx, "audit/2026-01-01/sub/again.json", []byte("v")); err != nil {
			t.Fatal(err)
		}
		if v, err := s.Get(ctx, "audit/2026-01-01/sub/again.json"); err != nil || string(v) != "v" {
			t.Fatalf("Get after a Put under a deleted prefix: %q, %v", v, err)
		}
	})

	t.Run("DeletePrefixConcurrentPuts", func(t *testing.T) {
		// Puts of keys beside the prefix (in its parent folder, which a
		// folder store may remove when the prefix's go) while it is
		// deleted are all kept.
		s := mk(t)
		const bulk = 200
		for i := range bulk {
			if err := s.Put(ctx, fmt.Sprintf("bulk/del/%d/k%d", i%7, i), []byte("x")); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		const puts = 40
		errs := make(chan error, puts)
		wg.Go(func() {
			<-start
			for i := range puts {
				if err := s.Put(ctx, fmt.Sprintf("bulk/keep/%d/k%d", i%3, i), []byte(fmt.Sprint(i))); err != nil {
					errs <- err
					return
				}
			}
		})
		close(start)
		n, err := store.DeletePrefix(ctx, s, "bulk/del/")
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("a Put beside the deleted prefix: %v", err)
		}
		if err != nil || n != bulk {
			t.Fatalf("DeletePrefix bulk/del/ = %d, %v; want %d", n, err, bulk)
		}
		if got, err := s.List(ctx, "bulk/del/"); err != nil || len(got) != 0 {
			t.Fatalf("List bulk/del/ after DeletePrefix = %q, %v", got, err)
		}
		for i := range puts {
			k := fmt.Sprintf("bulk/keep/%d/k%d", i%3, i)
			if v, err := s.Get(ctx, k); err != nil || string(v) != fmt.Sprint(i) {
				t.Errorf("Get %s, put while bulk/del/ was deleted: %q, %v", k, v, err)
			}
		}
	})

	t.Run("GetBounded", func(t *testing.T) {
		// store.GetBounded over this store (its own GetBounded when it is
		// a store.BoundedGetter): a value within the limit is returned, a
		// larger one refused naming the key and the limit.
		s := mk(t)
		for _, v := range [][]byte{[]byte("12345"), {}} {
			if err := s.Put(ctx, "k/v", v); err != nil {
				t.Fatal(err)
			}
			if got, err := store.GetBounded(ctx, s, "k/v", 5); err != nil || !bytes.Equal(got, v) {
				t.Errorf("GetBounded of %d bytes at a limit of 5 = %q, %v", len(v), got, err)
			}
		}
		if err := s.Put(ctx, "k/v", []byte("123456")); err != nil {
			t.Fatal(err)
		}
		_, err := store.GetBounded(ctx, s, "k/v", 5)
		if !errors.Is(err, store.ErrTooLarge) || !strings.Contains(err.Error(), "k/v") || !strings.Contains(err.Error(), "over the limit of 5") {
			t.Errorf("GetBounded of 6 bytes at a limit of 5: %v, want ErrTooLarge naming k/v and the limit", err)
		}
		if _, err := store.GetBounded(ctx, s, "k/none", 5); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetBounded of a missing key: %v, want ErrNotFound", err)
		}
		if _, err := store.GetBounded(ctx, s, "../k", 5); !errors.Is(err, store.ErrKey) {
			t.Errorf("GetBounded of an invalid key: %v, want ErrKey", err)
		}
	})

	t.Run("InvalidKeys", func(t *testing.T) {
		s := mk(t)
		for _, k := range []string{"", "/abs", "a//b", "../up", "a/../b", "a/.hidden", "trailing/", "sp ace", "nul\x00", "back\\slash", string(bytes.Repeat([]byte("k"), 513))} {
			if err := s.Put(ctx, k, []byte("v")); !errors.Is(err, store.ErrKey) {
				t.Errorf("Put %q: %v, want ErrKey", k, err)
			}
			if _, err := s.Get(ctx, k); !errors.Is(err, store.ErrKey) {
				t.Errorf("Get %q: %v, want ErrKey", k, err)
			}
			if err := s.Delete(ctx, k); !errors.Is(err, store.ErrKey) {
				t.Errorf("Delete %q: %v, want ErrKey", k, err)
			}
			if _, err := s.Lock(ctx, k); !errors.Is(err, store.ErrKey) {
				t.Errorf("Lock %q: %v, want ErrKey", k, err)
			}
		}
		if _, err := s.List(ctx, "../"); !errors.Is(err, store.ErrKey) {
			t.Errorf("List \"../\": %v, want ErrKey", err)
		}
	})

	t.Run("ConcurrentPuts", func(t *testing.T) {
		// Readers see one whole value or another, never a mix.
		s := mk(t)
		vals := [][]byte{bytes.Repeat([]byte("a"), 1<<16), bytes.Repeat([]byte("b"), 1<<17)}
		if err := s.Put(ctx, "k", vals[0]); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for w := range 4 {
			wg.Go(func() {
				for i := range 20 {
					if err := s.Put(ctx, "k", vals[(w+i)%2]); err != nil {
						errs <- err
						return
					}
					got, err := s.Get(ctx, "k")
					if err != nil {
						errs <- err
						return
					}
					if !bytes.Equal(got, vals[0]) && !bytes.Equal(got, vals[1]) {
						errs <- fmt.Errorf("read a value of %d bytes that no Put wrote", len(got))
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	})

	t.Run("Lock", func(t *testing.T) {
		s := mk(t)
		testLock(t, s, s)
	})

	t.Run("LockHonoursContext", func(t *testing.T) {
		s := mk(t)
		unlock, err := s.Lock(ctx, "locks/x")
		if err != nil {
			t.Fatal(err)
		}
		defer unlock()
		c, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		if _, err := s.Lock(c, "locks/x"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Lock of a held lock with an ending context: %v, want DeadlineExceeded", err)
		}
		done, cancel2 := context.WithCancel(ctx)
		cancel2()
		if _, err := s.Get(done, "k"); !errors.Is(err, context.Canceled) {
			t.Errorf("Get with a canceled context: %v, want Canceled", err)
		}
	})
}

// RunShared runs Run's tests on one handle and the tests of a shared
// store on two: open returns two Store values over the same, empty data
// (two processes or replicas).
func RunShared(t *testing.T, open func(t *testing.T) (store.Store, store.Store)) {
	Run(t, func(t *testing.T) store.Store {
		a, b := open(t)
		_ = b.Close()
		return a
	})
	ctx := context.Background()
	t.Run("SharedWrites", func(t *testing.T) {
		a, b := open(t)
		t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
		if err := a.Put(ctx, "trust/s.json", []byte("v1")); err != nil {
			t.Fatal(err)
		}
		if got, err := b.Get(ctx, "trust/s.json"); err != nil || string(got) != "v1" {
			t.Fatalf("the other handle reads %q, %v; want v1", got, err)
		}
		if err := b.Delete(ctx, "trust/s.json"); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Get(ctx, "trust/s.json"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("after the other handle deleted: %v, want ErrNotFound", err)
		}
	})
	t.Run("SharedLock", func(t *testing.T) {
		a, b := open(t)
		t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
		testLock(t, a, b)
	})
}

// testLock checks that a lock taken through a excludes b (and b's
// goroutines) until released: counters incremented under the lock by a
// read-modify-write lose no increment.
func testLock(t *testing.T, a, b store.Store) {
	t.Helper()
	ctx := context.Background()
	if err := a.Put(ctx, "counter", []byte("0")); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	const each = 15
	for w := range 4 {
		s := a
		if w%2 == 1 {
			s = b
		}
		wg.Go(func() {
			for range each {
				unlock, err := s.Lock(ctx, "locks/counter")
				if err != nil {
					errs <- err
					return
				}
				v, err := s.Get(ctx, "counter")
				if err == nil {
					var n int
					fmt.Sscan(string(v), &n)
					err = s.Put(ctx, "counter", fmt.Appendf(nil, "%d", n+1))
				}
				unlock()
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	v, err := a.Get(ctx, "counter")
	if err != nil || string(v) != fmt.Sprint(4*each) {
		t.Fatalf("counter = %q, %v after %d locked increments; a lock let two holders in", v, err, 4*each)
	}
}

// RunWatcher runs the tests of the store.Watcher contract: open returns
// two Store values over the same, empty data, the first a
// store.Watcher. Watch must call ready once, before any report, when
// every later write is reported (a write made as ready is called is);
// report the second's Puts and Deletes under its prefix, in order, and
// not the first's own writes (a prefix delete reported as a Delete of
// each key it deleted); and return when its ctx ends (ctx's error)
// or its Store is closed (nil).
func RunWatcher(t *testing.T, open func(t *testing.T) (store.Store, store.Store)) {
	ctx := context.Background()
	mk := func(t *testing.T) (store.Watcher, store.Store, store.Store) {
		a, b := open(t)
		t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
		w, ok := a.(store.Watcher)
		if !ok {
			t.Fatalf("%T is not a store.Watcher", a)
		}
		return w, a, b
	}

	t.Run("ReportsOthersWrites", func(t *testing.T) {
		w, a, b := mk(t)
		keys, _ := watch(t, w, "trust/", nil)
		if err := a.Put(ctx, "trust/own.json", []byte("mine")); err != nil {
			t.Fatal(err)
		}
		steps := []struct {
			del bool
			key string
		}{{false, "catalog/outside.json"}, {false, "trust/x.json"}, {false, "trust/x.json"}, {true, "trust/x.json"}, {true, "trust/never-was.json"}, {false, "trust/y.json"}}
		for _, s := range steps {
			var err error
			if s.del {
				err = b.Delete(ctx, s.key)
			} else {
				err = b.Put(ctx, s.key, []byte(s.key))
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		// A Delete of a missing key may or may not be reported; the
		// rest, in order, and nothing of a's or outside the prefix.
		var got []string
		for len(got) == 0 || got[len(got)-1] != "trust/y.json" {
			got = append(got, next(t, keys))
		}
		got = slices.DeleteFunc(got, func(k string) bool { return k == "trust/never-was.json" })
		if want := []string{"trust/x.json", "trust/x.json", "trust/x.json", "trust/y.json"}; !slices.Equal(got, want) {
			t.Fatalf("Watch reported %q, want %q (the other handle's writes under the prefix, in order; not this handle's own)", got, want)
		}
	})

	t.Run("ReportsDeletePrefix", func(t *testing.T) {
		// A prefix delete by the other handle is reported as a Delete of
		// each key it deleted; this handle's own is not reported.
		w, a, b := mk(t)
		keys, _ := watch(t, w, "trust/", nil)
		put := func(s store.Store, ks ...string) {
			for _, k := range ks {
				if err := s.Put(ctx, k, []byte(k)); err != nil {
					t.Fatal(err)
				}
			}
		}
		put(b, "trust/p/1", "trust/p/2", "trust/p3", "trust/q/1")
		put(a, "trust/own/1", "trust/own/2")
		for range 4 {
			next(t, keys)
		}
		if n, err := store.DeletePrefix(ctx, a, "trust/own/"); n != 2 || err != nil {
			t.Fatalf("DeletePrefix trust/own/ = %d, %v; want 2", n, err)
		}
		if n, err := store.DeletePrefix(ctx, b, "trust/p"); n != 3 || err != nil {
			t.Fatalf("DeletePrefix trust/p = %d, %v; want 3", n, err)
		}
		put(b, "trust/end")
		var got []string
		for len(got) == 0 || got[len(got)-1] != "trust/end" {
			got = append(got, next(t, keys))
		}
		slices.Sort(got[:len(got)-1]) // one statement's rows come in any order
		if want := []string{"trust/p/1", "trust/p/2", "trust/p3", "trust/end"}; !slices.Equal(got, want) {
			t.Fatalf("Watch reported %q, want %q (each key the other handle's prefix delete deleted; not this handle's)", got, want)
		}
	})

	t.Run("ReportsWritesFromReady", func(t *testing.T) {
		// A write committed as soon as ready is called (the earliest a
		// caller reads its state) is reported: no write falls between a
		// caller's read and the watch.
		w, _, b := mk(t)
		keys, _ := watch(t, w, "trust/", func() {
			if err := b.Put(ctx, "trust/at-ready.json", []byte("v2")); err != nil {
				t.Error(err)
			}
		})
		if k := next(t, keys); k != "trust/at-ready.json" {
			t.Fatalf("Watch reported %q first, want trust/at-ready.json (written when ready was called)", k)
		}
	})

	t.Run("EndsWithContext", func(t *testing.T) {
		w, _, _ := mk(t)
		c, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- w.Watch(c, "", nil, func(string) {}) }()
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Watch after its ctx ended: %v, want Canceled", err)
			}
		case <-time.After(hangGuard(t)):
			t.Fatal("Watch did not return after its ctx ended")
		}
	})

	t.Run("EndsWithClose", func(t *testing.T) {
		w, a, _ := mk(t)
		_, done := watch(t, w, "", nil)
		_ = a.Close()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Watch after Close: %v, want nil", err)
			}
		case <-time.After(hangGuard(t)):
			t.Fatal("Watch did not return after its Store was closed")
		}
	})

	t.Run("InvalidPrefix", func(t *testing.T) {
		w, _, _ := mk(t)
		c, cancel := context.WithTimeout(ctx, hangGuard(t))
		defer cancel()
		if err := w.Watch(c, "../", func() { t.Error("Watch of an invalid prefix called ready") }, func(string) {}); !errors.Is(err, store.ErrKey) {
			t.Fatalf("Watch \"../\": %v, want ErrKey", err)
		}
	})
}

// hangGuard bounds a wait for something that should happen: the test's
// deadline less a margin, or a minute.
func hangGuard(t *testing.T) time.Duration {
	if d, ok := t.Deadline(); ok {
		return max(time.Until(d)*9/10, time.Second)
	}
	return time.Minute
}

// watch runs w.Watch(prefix) on a goroutine and returns once Watch has
// called ready (after atReady, when not nil, which ready runs); the keys
// it reports arrive on the channel, and Watch's error on done. ready must
// be called once, before any key. The test's cleanup cancels the watch
// and waits for it.
func watch(t *testing.T, w store.Watcher, prefix string, atReady func()) (keys <-chan string, done <-chan error) {
	t.Helper()
	ch := make(chan string, 1024)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	readyc := make(chan struct{})
	var readied atomic.Int32
	go func() {
		errc <- w.Watch(ctx, prefix, func() {
			if readied.Add(1) > 1 {
				t.Error("Watch called ready more than once")
				return
			}
			if atReady != nil {
				atReady()
			}
			close(readyc)
		}, func(key string) {
			if readied.Load() == 0 {
				t.Errorf("Watch reported %q before it called ready", key)
			}
			select {
			case ch <- key:
			default:
				t.Errorf("more than %d keys reported without being read", cap(ch))
			}
		})
		close(errc)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-errc:
		case <-time.After(hangGuard(t)):
			t.Error("Watch did not return after its ctx ended")
		}
	})
	select {
	case <-readyc:
	case err := <-errc:
		t.Fatalf("Watch returned %v before it called ready", err)
	case <-time.After(hangGuard(t)):
		t.Fatal("Watch did not call ready")
	}
	return ch, errc
}

// next returns the next key reported.
func next(t *testing.T, keys <-chan string) string {
	t.Helper()
	select {
	case k := <-keys:
		return k
	case <-time.After(hangGuard(t)):
		t.Fatal("Watch reported nothing")
		return ""
	}
}

package encoder

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
)

// Calls that come while a pass runs wait, and are encoded together in one
// pass, run by the first of them; each gets its own texts' vectors, the
// same as alone, and the next call finds nobody encoding.
func TestQueryCallsShareAPass(t *testing.T) {
	u, err := NewUSE(nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	texts := [][]string{{"search flights to Paris"}, {"create a GitHub issue", ""}, {"东京の天気"}}
	var want [][][]float32
	for _, tx := range texts {
		v, err := u.EmbedQueries(ctx, tx)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, v)
	}
	b := &u.batches
	before := b.passes.Load()
	b.mu.Lock()
	b.busy = true // a pass in progress
	b.mu.Unlock()
	got := make([][][]float32, len(texts))
	// In a bubble, synctest.Wait returns once every call is blocked for
	// good: waiting for a pass, since one is in progress.
	synctest.Test(t, func(t *testing.T) {
		var wg sync.WaitGroup
		for i, tx := range texts {
			wg.Go(func() {
				v, err := u.EmbedQueries(ctx, tx)
				if err != nil {
					t.Error(err)
				}
				got[i] = v
			})
		}
		synctest.Wait()
		b.mu.Lock()
		n := len(b.pending)
		b.mu.Unlock()
		if n != len(texts) {
			t.Fatalf("%d calls waiting, want %d", n, len(texts))
		}
		// The pass in progress ends: as embedQueries hands over.
		b.mu.Lock()
		next := b.pending[0]
		b.pending = slices.Clone(b.pending[1:])
		b.mu.Unlock()
		close(next.lead)
		wg.Wait()
	})
	if n := b.passes.Load() - before; n != 1 {
		t.Errorf("%d passes for the calls that waited, want 1", n)
	}
	for i := range texts {
		if diff := cmp.Diff(want[i], got[i]); diff != "" {
			t.Errorf("call %d: vectors differ from its call alone (-want +got):\n%s", i, diff)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.busy || len(b.pending) > 0 {
		t.Errorf("after the pass: busy %v, %d pending; want idle", b.busy, len(b.pending))
	}
}

package audit_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolsift/toolsift/gateway/audit"
	"github.com/toolsift/toolsift/internal/pgtest"
	"github.com/toolsift/toolsift/store"
)

// TestPruneAudit: Prune deletes the whole days that ended by the
// cut, over a folder and over PostgreSQL: the day the cut falls in is
// kept whole (its records older than the cut too), later days and the
// records another writer makes of today while it runs are not touched,
// a cut less than a day ago deletes nothing, and a folder keeps no
// (empty) folder of a pruned day.
func TestPruneAudit(t *testing.T) {
	stores := map[string]func(t *testing.T) store.Store{
		"dir": func(t *testing.T) store.Store { return newDir(t, t.TempDir()) },
		"postgres": func(t *testing.T) store.Store {
			return openPostgres(t, pgtest.Start(t))
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st := open(t)
			today := time.Now().UTC().Truncate(24 * time.Hour)
			day := func(n int) time.Time { return today.AddDate(0, 0, -n) }
			write := func(tm time.Time, user string) {
				t.Helper()
				if err := audit.Write(ctx, st, audit.Record{Time: tm, User: user, Tool: "math__add", Outcome: "ok"}); err != nil {
					t.Fatal(err)
				}
			}
			write(day(40), "old")
			write(day(5).Add(time.Hour), "old")
			write(day(5).Add(23*time.Hour+59*time.Minute), "old")
			write(day(4).Add(12*time.Hour), "old")
			write(day(3).Add(time.Hour), "boundary-before-cut")
			write(day(3).Add(20*time.Hour), "boundary-after-cut")
			write(day(2).Add(time.Hour), "kept")
			write(day(1).Add(time.Hour), "kept")
			cut := day(3).Add(12 * time.Hour)

			for _, early := range []time.Time{time.Now().Add(time.Hour), time.Now().Add(-23 * time.Hour), today} {
				if days, err := audit.Prune(ctx, st, early); err == nil || len(days) != 0 || !strings.Contains(err.Error(), "at least 24h0m0s ago") {
					t.Errorf("Prune before %s = %v, %v; want an error, nothing deleted", early, days, err)
				}
			}
			if n := len(records(t, st)); n != 8 {
				t.Fatalf("%d records after refused prunes, want 8", n)
			}

			// Another replica writes today's records all along.
			stop, started := make(chan struct{}), make(chan struct{})
			var wg sync.WaitGroup
			var once sync.Once
			var written int
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						written = i
						return
					default:
					}
					if err := audit.Write(ctx, st, audit.Record{Time: time.Now(), User: "today", Tool: "math__add", Outcome: "ok"}); err != nil {
						t.Error(err)
						written = i
						once.Do(func() { close(started) })
						return
					}
					once.Do(func() { close(started) })
				}
			})
			<-started
			days, err := audit.Prune(ctx, st, cut)
			if err == nil { // a second prune at once finds nothing more
				var again []audit.Day
				again, err = audit.Prune(ctx, st, cut)
				if len(again) != 0 {
					t.Errorf("a second prune deleted %v", again)
				}
			}
			close(stop)
			wg.Wait()
			if err != nil {
				t.Fatal(err)
			}
			want := []audit.Day{
				{Day: day(40).Format(time.DateOnly), Records: 1},
				{Day: day(5).Format(time.DateOnly), Records: 2},
				{Day: day(4).Format(time.DateOnly), Records: 1},
			}
			if !slices.Equal(days, want) {
				t.Errorf("Prune before %s deleted %v, want %v", cut.Format(time.RFC3339), days, want)
			}
			var users []string
			nToday := 0
			for _, rec := range records(t, st) {
				if rec.User == "today" {
					nToday++
				} else {
					users = append(users, rec.User)
				}
			}
			if want := []string{"boundary-before-cut", "boundary-after-cut", "kept", "kept"}; !slices.Equal(users, want) {
				t.Errorf("after the prune: %q, want %q", users, want)
			}
			if nToday != written || written == 0 {
				t.Errorf("%d of today's records left, %d written while pruning", nToday, written)
			}
			if d, ok := st.(*store.Dir); ok {
				// A pruned day's folder goes with its last record, and no
				// empty folder is left under audit/.
				for _, day := range want {
					if _, err := os.Stat(filepath.Join(d.Path(), "audit", day.Day)); !errors.Is(err, fs.ErrNotExist) {
						t.Errorf("the folder of the pruned day %s: %v, want it gone", day.Day, err)
					}
				}
				if empty := emptyFolders(t, filepath.Join(d.Path(), "audit")); len(empty) != 0 {
					t.Errorf("empty folders under audit/ after the prune: %q", empty)
				}
			}
		})
	}
}

// emptyFolders returns the empty folders under root (root included).
func emptyFolders(t *testing.T, root string) []string {
	t.Helper()
	var empty []string
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil || !e.IsDir() {
			return err
		}
		if entries, err := os.ReadDir(p); err != nil || len(entries) == 0 {
			empty = append(empty, p)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return empty
}

func records(t *testing.T, st store.Store) []audit.Record {
	t.Helper()
	var recs []audit.Record
	for rec, err := range audit.Records(context.Background(), st, time.Time{}) {
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	return recs
}

// TestPruneAuditTakesTurns: replicas pruning at once take the store's
// lock in turn: each day is deleted by one of them, counted once.
func TestPruneAuditTakesTurns(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Start(t)
	a, b := openPostgres(t, url), openPostgres(t, url)
	today := time.Now().UTC().Truncate(24 * time.Hour)
	for d := 2; d <= 6; d++ {
		for i := range 20 {
			if err := audit.Write(ctx, a, audit.Record{Time: today.AddDate(0, 0, -d).Add(time.Duration(i) * time.Minute), User: fmt.Sprint("u", i), Tool: "math__add", Outcome: "ok"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for _, st := range []store.Store{a, b, a, b} {
		wg.Go(func() {
			days, err := audit.Prune(ctx, st, today.AddDate(0, 0, -1))
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			for _, d := range days {
				total += d.Records
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	if total != 5*20 {
		t.Errorf("the replicas deleted %d records in all, want %d (each once)", total, 5*20)
	}
	if n := len(records(t, a)); n != 0 {
		t.Errorf("%d records left", n)
	}
}

// TestPruneAuditByDay: over PostgreSQL, a store.PrefixDeleter, a day of
// 2,000 records goes with one DeletePrefix of the day and no Delete, each
// day counted; over a store that is not one, record by record, with the
// same counts.
func TestPruneAuditByDay(t *testing.T) {
	ctx := context.Background()
	for _, bulk := range []bool{true, false} {
		t.Run(fmt.Sprint("bulk=", bulk), func(t *testing.T) {
			pg := openPostgres(t, pgtest.Start(t))
			today := time.Now().UTC().Truncate(24 * time.Hour)
			day := func(n int) time.Time { return today.AddDate(0, 0, -n) }
			counts := map[int]int{3: 2000, 4: 5, 1: 3}
			for d, n := range counts {
				for i := range n {
					if err := audit.Write(ctx, pg, audit.Record{Time: day(d).Add(time.Duration(i) * time.Second), Tool: "math__add", Outcome: "ok"}); err != nil {
						t.Fatal(err)
					}
				}
			}
			st := &deleteCountingStore{Store: pg}
			var s store.Store = st
			if bulk {
				s = prefixDeleteCountingStore{st}
			}
			days, err := audit.Prune(ctx, s, day(2))
			if err != nil {
				t.Fatal(err)
			}
			want := []audit.Day{{Day: day(4).Format(time.DateOnly), Records: 5}, {Day: day(3).Format(time.DateOnly), Records: 2000}}
			if !slices.Equal(days, want) {
				t.Errorf("Prune = %v, want %v", days, want)
			}
			wantPrefixes, wantDeletes := []string{"audit/" + want[0].Day + "/", "audit/" + want[1].Day + "/"}, 0
			if !bulk {
				wantPrefixes, wantDeletes = nil, 2005
			}
			if !slices.Equal(st.prefixes, wantPrefixes) || st.deletes != wantDeletes {
				t.Errorf("the prune made %d Deletes and DeletePrefix %q; want %d and %q", st.deletes, st.prefixes, wantDeletes, wantPrefixes)
			}
			if n := len(records(t, pg)); n != counts[1] {
				t.Errorf("%d records left, want %d (yesterday's)", n, counts[1])
			}
		})
	}
}

// deleteCountingStore counts the Deletes made through it; it is not a
// store.PrefixDeleter (prefixDeleteCountingStore is).
type deleteCountingStore struct {
	store.Store
	mu       sync.Mutex
	deletes  int
	prefixes []string
}

func (c *deleteCountingStore) Delete(ctx context.Context, key string) error {
	c.mu.Lock()
	c.deletes++
	c.mu.Unlock()
	return c.Store.Delete(ctx, key)
}

// prefixDeleteCountingStore is a deleteCountingStore that is a
// store.PrefixDeleter: its store's DeletePrefix (an error when the store
// has none), each prefix noted.
type prefixDeleteCountingStore struct{ *deleteCountingStore }

func (c prefixDeleteCountingStore) DeletePrefix(ctx context.Context, prefix string) (int, error) {
	c.mu.Lock()
	c.prefixes = append(c.prefixes, prefix)
	c.mu.Unlock()
	d, ok := c.Store.(store.PrefixDeleter)
	if !ok {
		return 0, fmt.Errorf("%T is not a store.PrefixDeleter", c.Store)
	}
	return d.DeletePrefix(ctx, prefix)
}

// BenchmarkPruneAudit: pruning one day of 1,000 records (serve
// --audit-retention's daily work at 1,000 calls a day) from a folder and
// from PostgreSQL, and one day of 5,000 from PostgreSQL (a busy team
// gateway's); the records are written with the timer stopped.
//
//	go test ./gateway/audit -run '^$' -bench PruneAudit -benchtime 5x -count 3
func BenchmarkPruneAudit(b *testing.B) {
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		records int
	}{{"dir", 1000}, {"postgres", 1000}, {"postgres-5000", 5000}} {
		b.Run(c.name, func(b *testing.B) {
			var st store.Store
			if c.name == "dir" {
				st = newDir(b, b.TempDir())
			} else {
				st = openPostgres(b, pgtest.Start(b))
			}
			day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -3)
			records := c.records
			for range b.N {
				b.StopTimer()
				for i := range records {
					if err := audit.Write(ctx, st, audit.Record{Time: day.Add(time.Duration(i) * time.Second), Tool: "math__add", Outcome: "ok"}); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				days, err := audit.Prune(ctx, st, day.AddDate(0, 0, 1))
				if err != nil || len(days) != 1 || days[0].Records != records {
					b.Fatalf("Prune = %v, %v", days, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*records), "µs/record")
		})
	}
}

package audit_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/toolsift/toolsift/gateway/audit"
	"github.com/toolsift/toolsift/internal/pgtest"
	"github.com/toolsift/toolsift/store"
)

// TestMain stops the PostgreSQL cluster of prune_test.go.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func newDir(t testing.TB, path string) *store.Dir {
	t.Helper()
	d, err := store.NewDir(path)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestAuditRecordsSince: records are read from since on, across days,
// from keys that sort by time.
func TestAuditRecordsSince(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	now := time.Now().UTC()
	var times []time.Time
	for _, ago := range []time.Duration{72 * time.Hour, 25 * time.Hour, 2 * time.Hour, time.Minute} {
		tm := now.Add(-ago)
		times = append(times, tm)
		if err := audit.Write(ctx, st, audit.Record{Time: tm, User: "alice", Tool: "math__add", Outcome: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		since time.Time
		want  []time.Time
	}{
		{time.Time{}, times},
		{now.Add(-48 * time.Hour), times[1:]},
		{now.Add(-time.Hour), times[3:]},
		{now.Add(-400 * 24 * time.Hour), times},
		{now, nil},
	} {
		var got []time.Time
		for rec, err := range audit.Records(ctx, st, c.since) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, rec.Time)
		}
		if !slices.EqualFunc(got, c.want, time.Time.Equal) {
			t.Errorf("since %v: %v, want %v", c.since, got, c.want)
		}
	}
}

// BenchmarkAuditWrite: what a call's record costs before its result
// returns: a synced file (Dir) or a map (Memory).
func BenchmarkAuditWrite(b *testing.B) {
	ctx := context.Background()
	rec := audit.Record{User: "alice", Teams: []string{"eng"}, Tool: "math__add", Server: "math", UpstreamTool: "add",
		Duration: time.Millisecond, Outcome: "ok", Session: "0a1b2c3d"}
	for _, kind := range []string{"dir", "memory"} {
		b.Run(kind, func(b *testing.B) {
			var st store.Store = store.NewMemory()
			if kind == "dir" {
				st = newDir(b, b.TempDir())
			}
			b.ReportAllocs()
			for b.Loop() {
				rec.Time = time.Now()
				if err := audit.Write(ctx, st, rec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

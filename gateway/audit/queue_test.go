package audit_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift/gateway/audit"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/store"
)

// awayStore is a store whose writes, while away is set, hang until their
// ctx ends, as a database that went away has them retried; it counts
// the writes tried.
type awayStore struct {
	store.Store
	away atomic.Bool
	puts atomic.Int64
}

func (a *awayStore) Put(ctx context.Context, key string, value []byte) error {
	a.puts.Add(1)
	if a.away.Load() {
		<-ctx.Done()
		return errors.New("server unavailable: " + ctx.Err().Error())
	}
	return a.Store.Put(ctx, key, value)
}

// report reports rec through l as a call's handler does.
func report(l *audit.Log, rec audit.Record) {
	l.Middleware(func(ctx context.Context, _ string, _ mcp.Request) (mcp.Result, error) {
		audit.Report(ctx, rec)
		return nil, nil
	})(context.Background(), "tools/call", &mcp.CallToolRequest{})
}

// TestAuditStoreAway: while the store does not take records, the first
// call's record waits for it a moment and is kept in memory, the next
// ones are kept without trying the store; they are written once it takes
// them again, and Flush waits for that; past maxQueued a record is lost,
// and every one of these is logged and counted.
func TestAuditStoreAway(t *testing.T) {
	ctx := context.Background()
	st := &awayStore{Store: store.NewMemory()}
	var logs testenv.Buffer
	l := &audit.Log{Store: st, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	l.SetMaxQueued(3)
	rec := func(i int) audit.Record {
		return audit.Record{Time: time.Now(), Tool: "math__add", Outcome: "ok", Duration: time.Duration(i)}
	}
	report(l, rec(0))
	if keys, _ := st.List(ctx, "audit/"); len(keys) != 1 || l.Stats() != (audit.Stats{}) {
		t.Fatalf("with the store there: %d records, stats %+v", len(keys), l.Stats())
	}

	st.away.Store(true)
	tried := st.puts.Load()
	for i := 1; i <= 4; i++ {
		report(l, rec(i))
	}
	// One write tried (the first record's), and perhaps the drain's.
	if n := st.puts.Load() - tried; n < 1 || n > 2 {
		t.Errorf("%d writes tried for 4 records while the store is away, want the first record's (and the drain's)", n)
	}
	if s := l.Stats(); s.Queued != 3 || s.Delayed != 3 || s.Lost != 1 {
		t.Errorf("stats while the store is away: %+v, want 3 queued, 3 delayed, 1 lost", s)
	}
	fctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	if err := l.Flush(fctx); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "3 records not written") {
		t.Errorf("Flush while the store is away: %v", err)
	}
	cancel()

	st.away.Store(false)
	fctx, cancel = context.WithTimeout(ctx, testenv.WaitLimit())
	defer cancel()
	if err := l.Flush(fctx); err != nil {
		t.Fatal(err)
	}
	if s := l.Stats(); s.Queued != 0 || s.Delayed != 3 || s.Lost != 1 {
		t.Errorf("stats once the store is back: %+v", s)
	}
	var durations []time.Duration
	for r, err := range audit.Records(ctx, st, time.Time{}) {
		if err != nil {
			t.Fatal(err)
		}
		durations = append(durations, r.Duration)
	}
	if len(durations) != 4 || durations[0] != 0 || durations[1] != 1 || durations[2] != 2 || durations[3] != 3 {
		t.Errorf("records %v, want the first four, in order", durations)
	}
	for _, want := range []string{
		`msg="audit records kept in memory until the store takes them"`,
		`msg="audit record not written" tool=math__add outcome=ok error="server unavailable: context deadline exceeded" audit_failures=1 queued=1`,
		"audit_failures=3 queued=3",
		`msg="audit record lost: too many records wait for the store" tool=math__add outcome=ok queued=3 audit_lost=1`,
		`msg="audit records written after the store took them again" written=3`,
	} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log lacks %s:\n%s", want, logs.String())
		}
	}
	// Written: the next record goes to the store with its call again.
	report(l, rec(5))
	if keys, _ := st.List(ctx, "audit/"); len(keys) != 5 || l.Stats().Queued != 0 {
		t.Errorf("after the recovery: %d records, stats %+v", len(keys), l.Stats())
	}
}
